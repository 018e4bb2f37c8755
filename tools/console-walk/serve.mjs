// Static server for the built console (SPA fallback), loopback only.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
const root = process.argv[2];
const port = Number(process.argv[3] ?? 4300);
const types = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.htm': 'text/html',
};
http
  .createServer((req, res) => {
    let p = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let f = path.join(root, p);
    // Relative asset paths under nested routes: drop leading segments until the file exists.
    const parts = p.split('/').filter(Boolean);
    while ((!fs.existsSync(f) || fs.statSync(f).isDirectory()) && parts.length > 1) {
      parts.shift();
      f = path.join(root, ...parts);
    }
    if (!f.startsWith(root) || !fs.existsSync(f) || fs.statSync(f).isDirectory()) f = path.join(root, 'index.html');
    res.setHeader('content-type', types[path.extname(f)] ?? 'application/octet-stream');
    fs.createReadStream(f).pipe(res);
  })
  .listen(port, '127.0.0.1', () => console.log('serving', root, 'on', port));
