/**
 * The services as JavaScript bundles (issue 25): no TypeScript compiler and no loader at run time.
 * Each service's `src/main.ts` and everything it imports from the workspace (`@ziti/*`) is bundled
 * by esbuild (the compiler tsx uses) into `<out>/<service>.mjs`, the operator's command into
 * `<out>/ziti-edge-ops.mjs` (`toolEntries`), code shared by several of them in `<out>/chunk-*.mjs`; packages from node_modules stay imports, resolved from the
 * folder above `<out>` as from the repository root. What a module finds next to itself through
 * `import.meta.url` (the migrations) is copied under `<out>` at its repository path, and the module
 * is told that path, so a bundle folder works wherever it is put, next to a `node_modules`.
 *
 *   node --import tsx deploy/bundles.ts [--out dist] [--node-modules <dir>]
 *
 * `--node-modules <dir>` also copies the packages the bundles import, with everything they depend
 * on, from this install into `<dir>` (the image's pruned production tree: no compiler, no tsx, no
 * test tools). The local cluster (`npm run cluster`, deploy/local-cluster.ts) runs the same bundles
 * from node_modules/.cache/ziti-cluster, made again whenever a file they were made from changed.
 */
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fingerprint, toPosix, workspacePlugin } from '../tools/esbuild-workspace-plugin.mjs';

export const root = fileURLToPath(new URL('..', import.meta.url));

/** The bundled processes: each service's entry point. */
export const bundleEntries = {
  gateway: 'services/gateway/src/main.ts',
  auth: 'services/auth/src/main.ts',
  'pki-enrollment': 'services/pki-enrollment/src/main.ts',
  policy: 'services/policy/src/main.ts',
  inventory: 'services/inventory/src/main.ts',
  audit: 'services/audit/src/main.ts',
  fabric: 'services/fabric/src/main.ts',
} as const;
export type BundleName = keyof typeof bundleEntries;

/**
 * Bundled beside the services, sharing their chunks: the operator's command (apps/ops), which the
 * image puts on its PATH as `ziti-edge-ops` (`node /app/dist/ziti-edge-ops.mjs`). Left out of a tree
 * that has no apps/ops.
 */
export const toolEntries = { 'ziti-edge-ops': 'apps/ops/src/main.ts' } as const;

/**
 * How a service's bundle is run, the same in the local cluster and in the image (the entrypoint, the
 * image's environment and the chart's values; deploy/check.ts holds them to this):
 * - two malloc arenas instead of one per thread and core;
 * - V8's young generation capped at 2 MiB semi-spaces (it grows to 16 MiB in the first seconds and keeps
 *   them until a long idle stretch): 10–20 MiB less at rest. Not in policy, on the path of every session,
 *   where the cap costs garbage-collection time. The gateway has it since issue 25 (idle RSS at most half
 *   of before); its requests keep express's prototypes from birth (docs/adr/0019), and its CPU per read
 *   is measured in docs/BENCHMARKS.md (idle RSS);
 * - in the gateway, two V8 platform threads instead of four (`--v8-pool-size=2`; they run concurrent
 *   marking and compilation): 6 MiB less at rest (97 → 91 MiB at the highest, docs/BENCHMARKS.md).
 */
export const serviceRuntime = {
  nodeArgs: {
    gateway: ['--max-semi-space-size=2', '--v8-pool-size=2'],
    auth: ['--max-semi-space-size=2'],
    'pki-enrollment': ['--max-semi-space-size=2'],
    policy: [],
    inventory: ['--max-semi-space-size=2'],
    audit: ['--max-semi-space-size=2'],
    fabric: ['--max-semi-space-size=2'],
  } satisfies Record<keyof typeof bundleEntries, string[]> as Record<keyof typeof bundleEntries, readonly string[]>,
  env: { MALLOC_ARENA_MAX: '2' },
} as const;

/**
 * Modules the services never run: the embedded database (PGlite, only under `npm start`, which has
 * its own bundle) is imported by the platform's database module for both kinds of database. In a
 * service bundle it is replaced by a module that refuses to open one, so neither its code (and the
 * memory it takes once loaded) nor its 27 MB of WebAssembly reach the processes or the image.
 */
const notInServices: Record<string, string> = {
  '@electric-sql/pglite': `
    export class PGlite {
      static defaultStartParams = [];
      constructor() { throw new Error('the embedded database (PGlite) is not part of the service bundles: give the service a postgres:// URL'); }
      static create() { return new PGlite(); }
    }`,
  '@electric-sql/pglite/contrib/pg_trgm': 'export const pg_trgm = {};',
  'drizzle-orm/pglite': `
    export function drizzle() { throw new Error('the embedded database (PGlite) is not part of the service bundles'); }`,
};

/** What a build made: the files it was made from (repository paths) and the packages the bundles import. */
export interface BundleManifest {
  /** sha256 over the files below and their content. */
  hash: string;
  files: string[];
  /** Package names (not subpaths) the bundles import from node_modules. */
  packages: string[];
}

/** The package a bare import names: `pg` of `pg/lib/x`, `@scope/name` of `@scope/name/sub`. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Node's lookup of a package folder from `fromDir` upwards; undefined when no node_modules has it. */
function findPackage(name: string, fromDir: string): string | undefined {
  let dir = fromDir;
  for (;;) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The manifests a build depends on besides the sources it reads: how they resolve and compile, and this file. */
function manifestFiles(): string[] {
  const files = [
    'package.json',
    'package-lock.json',
    'tsconfig.json',
    'tsconfig.base.json',
    'deploy/bundles.ts',
    'tools/esbuild-workspace-plugin.mjs',
  ];
  for (const top of ['packages', 'services'])
    for (const name of readdirSync(join(root, top)).sort())
      if (existsSync(join(root, top, name, 'package.json'))) files.push(`${top}/${name}/package.json`);
  return files;
}

/** Every file under `dir` (repository paths). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [toPosix(relative(root, join(dir, e.name)))] : [],
  );
}

/**
 * Bundles every entry into `outDir` (made anew; written in full before it replaces what was there)
 * and copies the folders the sources reach through `new URL('<path>', import.meta.url)`.
 */
export async function buildBundles(outDir: string, options: { sourcemap?: boolean } = {}): Promise<BundleManifest> {
  const { build } = await import('esbuild');
  const read = new Map<string, Buffer>();
  for (const f of manifestFiles()) read.set(f, readFileSync(join(root, f)));
  const packages = new Set<string>();
  /** Repository paths of the files or folders a source reaches beside itself. */
  const assets = new Set<string>();
  const rootModules = join(root, 'node_modules');
  const plugin = workspacePlugin({
    name: 'ziti-service-bundles',
    root,
    read,
    // Each module keeps its own URL, relative to the bundle that holds it: the folder of bundles
    // mirrors the repository for what the module finds beside itself.
    moduleUrl: 'bundle',
    setup(b) {
      b.onLoad({ filter: /.*/, namespace: 'not-in-services' }, (a) => ({
        contents: notInServices[a.path],
        loader: 'js',
      }));
    },
    external(a) {
      if (a.path in notInServices) return { path: a.path, namespace: 'not-in-services' };
      const name = packageOf(a.path);
      // The bundles resolve their imports from the repository root: a workspace holding a
      // version of its own (a nested node_modules) would silently get another one there.
      const found = findPackage(name, a.resolveDir);
      if (found && resolve(found) !== join(rootModules, name))
        return { errors: [{ text: `${name} resolves to ${relative(root, found)}, not node_modules/${name}` }] };
      packages.add(name);
      return { path: a.path, external: true };
    },
    onSource(path, text) {
      for (const m of text.matchAll(/new URL\(\s*(['"])([^'"]+)\1\s*,\s*import\.meta\.url\s*\)/g)) {
        const target = resolve(dirname(path), m[2]!);
        if (existsSync(target)) assets.add(toPosix(relative(root, target)));
      }
    },
  });
  const result = await build({
    absWorkingDir: root,
    entryPoints: {
      ...bundleEntries,
      ...Object.fromEntries(Object.entries(toolEntries).filter(([, entry]) => existsSync(join(root, entry)))),
    },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunk-[hash]',
    sourcemap: options.sourcemap === false ? false : 'linked',
    sourcesContent: false,
    legalComments: 'none',
    write: false,
    logLevel: 'silent',
    plugins: [plugin],
  });
  for (const asset of assets) {
    const path = join(root, asset);
    if (statSync(path).isDirectory()) for (const f of filesUnder(path)) read.set(f, readFileSync(join(root, f)));
    else read.set(asset, readFileSync(path));
  }
  const files = [...read.keys()].sort();
  const hash = fingerprint(files, (f) => read.get(f))!;
  const manifest: BundleManifest = { hash, files, packages: [...packages].sort() };

  const tmp = `${outDir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const out of result.outputFiles) {
    const to = join(tmp, relative(outDir, out.path));
    mkdirSync(dirname(to), { recursive: true });
    writeFileSync(to, out.contents);
  }
  for (const asset of assets) {
    const from = join(root, asset);
    const files = statSync(from).isDirectory() ? filesUnder(from) : [asset];
    for (const f of files) {
      mkdirSync(dirname(join(tmp, f)), { recursive: true });
      copyFileSync(join(root, f), join(tmp, f));
    }
  }
  writeFileSync(join(tmp, 'bundles.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  rmSync(outDir, { recursive: true, force: true });
  renameSync(tmp, outDir);
  return manifest;
}

/**
 * Copies `packages` and every package they depend on (dependencies, optional dependencies that
 * are installed, peer dependencies that are installed), each as installed under `from`, into
 * `to` at the same place: node's resolution finds the same versions there. Nothing else: no
 * compiler, no loader, no test tool, no workspace link. Returns the package folders copied.
 */
export function copyProductionPackages(packages: string[], from: string, to: string): string[] {
  const fromRoot = resolve(from);
  const kept = new Set<string>();
  const pending: { name: string; fromDir: string; required: boolean; wanted: string }[] = packages.map((name) => ({
    name,
    fromDir: dirname(fromRoot),
    required: true,
    wanted: 'the bundles',
  }));
  while (pending.length > 0) {
    const { name, fromDir, required, wanted } = pending.pop()!;
    const dir = findPackage(name, fromDir);
    if (!dir || !resolve(dir).startsWith(fromRoot + sep)) {
      if (required) throw new Error(`${wanted} need ${name}, which is not installed under ${from}`);
      continue;
    }
    if (kept.has(dir)) continue;
    kept.add(dir);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
    };
    for (const dep of Object.keys(manifest.dependencies ?? {}))
      pending.push({ name: dep, fromDir: dir, required: true, wanted: name });
    // An optional dependency is kept where it is installed (a platform's native build); a peer only
    // when it is not optional (an optional peer is the user's choice: the bundles import what they use).
    for (const dep of Object.keys(manifest.optionalDependencies ?? {}))
      pending.push({ name: dep, fromDir: dir, required: false, wanted: name });
    for (const dep of Object.keys(manifest.peerDependencies ?? {}))
      if (!manifest.peerDependenciesMeta?.[dep]?.optional && !dep.startsWith('@types/'))
        pending.push({ name: dep, fromDir: dir, required: false, wanted: name });
  }
  rmSync(to, { recursive: true, force: true });
  mkdirSync(to, { recursive: true });
  for (const dir of [...kept].sort()) {
    // The package without its own node_modules: what of it is needed is kept on its own above.
    cpSync(dir, join(to, relative(fromRoot, dir)), {
      recursive: true,
      filter: (src) => !relative(dir, src).split(sep).includes('node_modules'),
    });
  }
  return [...kept].map((d) => toPosix(relative(fromRoot, d))).sort();
}

const cacheDir = join(root, 'node_modules', '.cache', 'ziti-cluster');
const stampFile = join(cacheDir, 'bundles.json');

/** The cached bundle folder if it was made from exactly the files there are now. */
function freshClusterBundles(): string | undefined {
  let stamp: { dir: string; hash: string; files: string[] };
  try {
    stamp = JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return undefined;
  }
  const dir = join(cacheDir, stamp.dir);
  if (!existsSync(join(dir, 'bundles.json'))) return undefined;
  return fingerprint([...stamp.files, ...manifestFiles()], (f) => readFileSync(join(root, f))) === stamp.hash
    ? dir
    : undefined;
}

/**
 * The bundles the local cluster runs: under node_modules/.cache/ziti-cluster/bundle-<hash>, made
 * when a file they were made from changed (a few milliseconds to check, about a second to make).
 * A bundle folder is never changed once in place: clusters started at the same time (the test
 * suite's) share it, and one that is made again goes to a new folder; old ones go after an hour.
 */
export async function clusterBundles(): Promise<string> {
  const fresh = freshClusterBundles();
  if (fresh) return fresh;
  mkdirSync(cacheDir, { recursive: true });
  const building = join(cacheDir, `build-${process.pid}-${Date.now().toString(36)}`);
  const manifest = await buildBundles(building);
  const dir = `bundle-${manifest.hash.slice(0, 16)}`;
  if (existsSync(join(cacheDir, dir, 'bundles.json'))) rmSync(building, { recursive: true, force: true });
  else {
    try {
      renameSync(building, join(cacheDir, dir));
    } catch (err) {
      rmSync(building, { recursive: true, force: true });
      if (!existsSync(join(cacheDir, dir, 'bundles.json'))) throw err;
    }
  }
  const stamp = `${stampFile}.tmp-${process.pid}`;
  writeFileSync(stamp, JSON.stringify({ dir, hash: manifest.hash, files: manifest.files }));
  renameSync(stamp, stampFile);
  for (const old of readdirSync(cacheDir)) {
    const path = join(cacheDir, old);
    const age = Date.now() - (statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if ((old.startsWith('bundle-') || old.startsWith('build-')) && old !== dir && age > 60 * 60_000)
      rmSync(path, { recursive: true, force: true });
  }
  return join(cacheDir, dir);
}

/** Size of a folder in bytes (files only). */
export function folderBytes(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const path = join(dir, e.name);
    return sum + (e.isDirectory() ? folderBytes(path) : e.isFile() ? statSync(path).size : 0);
  }, 0);
}

function argument(argv: string[], name: string): string | undefined {
  const at = argv.indexOf(name);
  if (at >= 0) return argv[at + 1];
  return argv.find((a) => a.startsWith(`${name}=`))?.slice(name.length + 1);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const argv = process.argv.slice(2);
  const unknown = argv.filter((a) => a.startsWith('-') && !/^--(out|node-modules|help)(=|$)/.test(a));
  if (argv.includes('--help') || unknown.length > 0) {
    console.log('usage: node --import tsx deploy/bundles.ts [--out <dir>] [--node-modules <dir>]');
    process.exit(unknown.length > 0 && !argv.includes('--help') ? 2 : 0);
  }
  const out = resolve(argument(argv, '--out') ?? join(root, 'dist'));
  const modules = argument(argv, '--node-modules');
  try {
    const started = performance.now();
    const manifest = await buildBundles(out);
    const bundles = readdirSync(out).filter((f) => f.endsWith('.mjs'));
    console.log(
      `bundles: ${Object.keys(bundleEntries)
        .map((n) => `${relative(process.cwd(), join(out, `${n}.mjs`))}`)
        .join(
          ', ',
        )} (${bundles.length} files, ${(folderBytes(out) / 2 ** 20).toFixed(1)} MiB with source maps and migrations, ${Math.round(performance.now() - started)} ms)`,
    );
    console.log(`imports from node_modules: ${manifest.packages.join(', ')}`);
    if (modules) {
      const copied = copyProductionPackages(manifest.packages, join(root, 'node_modules'), resolve(modules));
      console.log(
        `node_modules: ${copied.length} packages, ${(folderBytes(resolve(modules)) / 2 ** 20).toFixed(1)} MiB in ${relative(process.cwd(), resolve(modules)) || '.'}`,
      );
    }
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { file: string; line: number } }[] }).errors;
    const detail = errors?.length
      ? errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}: ${e.text}` : e.text)).join('\n')
      : (err as Error).message;
    console.error(`bundles: ${detail}`);
    process.exit(1);
  }
}
