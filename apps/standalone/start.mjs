// `npm start`: runs apps/standalone/src/main.ts from an ahead-of-time JavaScript bundle instead of
// compiling TypeScript through tsx at every start (about a second of a restart). The bundle is made
// with esbuild (the one tsx uses) under node_modules/.cache/ziti-standalone and made again whenever
// anything it was made from changed: every source file it bundles, the workspace manifests, the
// tsconfig and this file are fingerprinted by content at every start (a few milliseconds), so an edit
// is never run stale. Workspace packages (@ziti/*) are bundled, everything in node_modules is loaded
// from there as before. `--prepare` (the postinstall step) makes the bundle and the template database
// cluster and exits, so that the first `npm start` after `npm ci` has nothing left to make.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import process from 'node:process';
import { URL, fileURLToPath, pathToFileURL } from 'node:url';
import { fingerprint } from '../../tools/esbuild-workspace-plugin.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const cacheDir = join(root, 'node_modules', '.cache', 'ziti-standalone');
const stampFile = join(cacheDir, 'bundle.json');
const entries = { main: 'apps/standalone/src/main.ts', prepare: 'apps/standalone/src/prepare.ts' };
const prepareOnly = process.argv.includes('--prepare');

/** What the bundle depends on besides the sources it bundles: how they resolve and compile, and how it is made. */
function manifests() {
  const files = [
    'package.json',
    'tsconfig.json',
    'tsconfig.base.json',
    'apps/standalone/start.mjs',
    'tools/esbuild-workspace-plugin.mjs',
  ];
  for (const top of ['apps', 'packages', 'services'])
    for (const name of readdirSync(join(root, top)).sort())
      if (existsSync(join(root, top, name, 'package.json'))) files.push(`${top}/${name}/package.json`);
  return files;
}

/** What the bundle is made from (tools/esbuild-workspace-plugin.mjs), under this checkout's root. */
const fingerprintOf = (files, contentOf = (f) => readFileSync(join(root, f))) => fingerprint(files, contentOf, root);

/** The bundle directory if the recorded bundle was made from exactly the files there are now. */
function freshBundle() {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return undefined;
  }
  if (stamp.root !== root || !existsSync(join(cacheDir, stamp.dir, 'main.js'))) return undefined;
  if (fingerprintOf([...stamp.files, ...manifests()]) !== stamp.hash) return undefined;
  return join(cacheDir, stamp.dir);
}

async function build() {
  const { build: esbuild, stop } = await import('esbuild');
  const { workspacePlugin } = await import('../../tools/esbuild-workspace-plugin.mjs');
  const read = new Map();
  for (const f of manifests()) read.set(f, readFileSync(join(root, f)));
  const result = await esbuild({
    absWorkingDir: root,
    entryPoints: entries,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // The bundles live beside it (bundle-<hash>), so the source maps' relative paths hold.
    outdir: join(cacheDir, 'bundle'),
    sourcemap: 'linked',
    sourcesContent: false,
    write: false,
    metafile: true,
    logLevel: 'error',
    // Packages from node_modules stay imports; only the workspace (@ziti/*) is bundled. Every source
    // is read by the plugin: its content is what the fingerprint is made of, and each module keeps
    // its own import.meta.url (the migrations are found relative to it).
    plugins: [workspacePlugin({ name: 'ziti-standalone', root, read, moduleUrl: 'source' })],
  }).finally(() => {
    // esbuild's service process would otherwise stay beside the controller for its whole life
    // (~90 MiB resident after a bundle of the workspace).
    stop();
  });
  const files = [...read.keys()];
  const hash = fingerprintOf(files, (f) => read.get(f));
  const dir = `bundle-${hash.slice(0, 16)}`;
  // A bundle directory is never changed once in place: one made from the same files (by another
  // start at the same time) is kept as it is, since a process may be loading from it.
  if (!existsSync(join(cacheDir, dir, 'main.js'))) {
    const tmp = join(cacheDir, `${dir}.tmp-${process.pid}`);
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    for (const out of result.outputFiles)
      writeFileSync(join(tmp, relative(join(cacheDir, 'bundle'), out.path)), out.contents);
    try {
      renameSync(tmp, join(cacheDir, dir));
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(join(cacheDir, dir, 'main.js'))) throw err;
    }
  }
  writeFileSync(`${stampFile}.tmp-${process.pid}`, JSON.stringify({ root, dir, hash, files }));
  renameSync(`${stampFile}.tmp-${process.pid}`, stampFile);
  // Earlier bundles (and what an interrupted build left) go after ten minutes: a start that is
  // running one imports its last chunks only once its databases are copied.
  for (const old of readdirSync(cacheDir)) {
    const path = join(cacheDir, old);
    const age = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (old.startsWith('bundle-') && old !== dir && age > 10 * 60_000) rmSync(path, { recursive: true, force: true });
  }
  return join(cacheDir, dir);
}

let bundle = freshBundle();
if (!bundle) {
  try {
    bundle = await build();
  } catch (err) {
    // A compile error: esbuild has printed it with its place, as tsx would have. (The install goes on.)
    if (Array.isArray(err?.errors) && err.errors.length > 0) process.exit(prepareOnly ? 0 : 1);
    process.stderr.write(`standalone: could not make the start-up bundle, running the sources through tsx (${err})\n`);
  }
}

if (prepareOnly) {
  if (bundle) await (await import(pathToFileURL(join(bundle, 'prepare.js')).href)).prepare();
} else if (bundle) {
  process.setSourceMapsEnabled(true); // stack traces point at the TypeScript sources
  await import(pathToFileURL(join(bundle, 'main.js')).href);
} else {
  (await import('tsx/esm/api')).register();
  await import(pathToFileURL(join(root, entries.main)).href);
}
