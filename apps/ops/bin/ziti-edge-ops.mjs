#!/usr/bin/env node
// ziti-edge-ops: the operator's command. Runs its JavaScript bundle (apps/ops/dist/main.js, made by
// `node apps/ops/bundle.mjs`, which the production image runs at build time) when there is one and it
// was made from the sources there are now; otherwise the TypeScript sources through tsx (a
// development tree). The image needs no tsx: a bundle whose sources are absent is always run.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';

const app = fileURLToPath(new URL('..', import.meta.url));
const bundle = join(app, 'dist', 'main.js');

/** Whether the bundle's recorded sources all exist here and one of them changed since it was made. */
function stale() {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(join(app, 'dist', 'stamp.json'), 'utf8'));
  } catch {
    return false;
  }
  const hash = createHash('sha256');
  for (const file of stamp.files) {
    const path = join(stamp.root, file);
    if (!existsSync(path)) return false; // an image without the sources: the bundle is all there is
    const content = readFileSync(path);
    hash.update(`\0${file}\0${content.length}\0`).update(content);
  }
  return hash.digest('hex') !== stamp.hash;
}

async function fromSources() {
  try {
    (await import('tsx/esm/api')).register();
  } catch {
    return false;
  }
  await import(pathToFileURL(join(app, 'src', 'main.ts')).href);
  return true;
}

if (existsSync(bundle) && !stale()) {
  process.setSourceMapsEnabled(true);
  await import(pathToFileURL(bundle).href);
} else if (!(await fromSources())) {
  if (existsSync(bundle)) await import(pathToFileURL(bundle).href);
  else {
    process.stderr.write('ziti-edge-ops: neither its bundle (apps/ops/dist/main.js) nor tsx is installed\n');
    process.exit(1);
  }
}
