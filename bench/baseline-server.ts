/**
 * Baselines for the benchmark, each in its own process like the gateway: a bare Node `https`
 * server and an express hello-world, both over TLS with the same kind of key (ECDSA P-256).
 * Usage: node --import tsx bench/baseline-server.ts <node|express> <certFile> <keyFile>
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import express from 'express';

const [kind, certFile, keyFile] = process.argv.slice(2);
const tls = { cert: readFileSync(certFile!), key: readFileSync(keyFile!) };
const body = JSON.stringify({ data: { hello: 'world' }, meta: {} });

const handler =
  kind === 'express'
    ? (() => {
        const app = express();
        app.get('/', (_req, res) => {
          res.type('application/json').send(body);
        });
        return app;
      })()
    : (_req: unknown, res: import('node:http').ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      };

const server = createServer(tls, handler as never);
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  const a = server.address();
  process.stdout.write(`listening ${typeof a === 'object' && a ? a.port : 0}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
