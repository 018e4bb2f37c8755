// Makes the JavaScript bundle of ziti-edge-ops (apps/ops/dist/main.js) with esbuild, as
// apps/standalone/start.mjs bundles `npm start`: the workspace (@ziti/*) is bundled, every package
// from node_modules stays an import (loaded from the image's production node_modules), and each
// module keeps its own import.meta.url, so the services' migrations are read from their folders
// (services/<svc>/migrations) as the services read them. The production image runs
// `node apps/ops/bundle.mjs` at build time; the launcher (bin/ziti-edge-ops.mjs) runs the bundle.
// `--out <dir>` writes elsewhere (default apps/ops/dist).
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { fingerprint, workspacePlugin } from '../../tools/esbuild-workspace-plugin.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const at = process.argv.indexOf('--out');
const out = resolve(at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : join(root, 'apps', 'ops', 'dist'));
const read = new Map();

const result = await build({
  absWorkingDir: root,
  entryPoints: { main: 'apps/ops/src/main.ts' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  outdir: out,
  sourcemap: 'linked',
  sourcesContent: false,
  write: false,
  logLevel: 'error',
  plugins: [workspacePlugin({ name: 'ziti-ops', root, read, moduleUrl: 'source' })],
});

const files = [...read.keys()].sort();
const tmp = `${out}.tmp-${process.pid}`;
rmSync(tmp, { recursive: true, force: true });
mkdirSync(tmp, { recursive: true });
for (const file of result.outputFiles) {
  const path = join(tmp, relative(out, file.path));
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, file.contents);
}
writeFileSync(join(tmp, 'stamp.json'), JSON.stringify({ root, files, hash: fingerprint(files, (f) => read.get(f)) }));
rmSync(out, { recursive: true, force: true });
renameSync(tmp, out);
process.stdout.write(`ziti-edge-ops bundle: ${relative(root, out)}/main.js (${files.length} sources)\n`);
