import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from '@ziti/platform/db/database';
import { type Migration, platformMigrations, readMigrations } from '@ziti/platform/db/migrations';

/**
 * Where `npm start` keeps what it makes once per install: the ahead-of-time bundle
 * (apps/standalone/start.mjs), the template database clusters and the ready copies of them. Under
 * node_modules, so `npm ci` starts it afresh and no linter, formatter or git sees it.
 */
export const cacheDir = fileURLToPath(new URL('../../../node_modules/.cache/ziti-standalone/', import.meta.url));

/** The embedded databases of `npm start`, each named after its directory in the data dir, and the service owning it. */
export const embeddedDatabases = {
  pki: 'pki-enrollment',
  auth: 'auth',
  policy: 'policy',
  inventory: 'inventory',
  audit: 'audit',
} as const;
export type EmbeddedDatabase = keyof typeof embeddedDatabases;

/**
 * A service's migrations, read from its `migrations/` folder as its composition root
 * (services/<service>/src/app.ts) reads them: early, without loading the service.
 */
export function serviceMigrations(name: EmbeddedDatabase): Migration[] {
  return readMigrations(new URL(`../../../services/${embeddedDatabases[name]}/migrations/`, import.meta.url));
}

/** What a service template is made of: every migration `migrate` applies to it (the platform's, then the service's). */
function migrationsFingerprint(migrations: Migration[]): string {
  const hash = createHash('sha256');
  for (const m of [...platformMigrations, ...migrations]) hash.update(`${m.version}\0${m.sql.length}\0`).update(m.sql);
  return hash.digest('hex').slice(0, 16);
}

function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The template for this PGlite version: an empty cluster exactly as a first open lays it down. */
export function templateDir(cache = cacheDir): string {
  return join(cache, `pglite-${pgliteVersion()}`);
}

/**
 * Where a service's template (the empty cluster with the service's current migrations applied, by
 * `migrate` itself) and its ready copy live. Named after the migrations: once one is added or
 * changed, the old ones no longer match and a first start seeds from the empty template instead.
 */
function servicePaths(name: EmbeddedDatabase, migrations: Migration[], cache: string) {
  const key = `pglite-${pgliteVersion()}-${name}-${migrationsFingerprint(migrations)}`;
  return { template: join(cache, key), ready: join(cache, `ready-${key}`) };
}

const isCluster = (dir: string) => existsSync(join(dir, 'PG_VERSION'));

/** Whether the process that named a leftover (`….building-<pid>`) is gone, so the leftover can go. */
function abandoned(name: string): boolean {
  const pid = Number(/-(\d+)$/.exec(name)?.[1]);
  if (!pid || pid === process.pid) return !pid;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/**
 * Makes `dir` with `make(building)` unless it is there: made aside and renamed into place, so a
 * concurrent or interrupted run never leaves half of it. What an interrupted run left goes first.
 */
async function buildAside(dir: string, make: (building: string) => Promise<void>): Promise<string> {
  if (isCluster(dir)) return dir;
  mkdirSync(dirname(dir), { recursive: true, mode: 0o700 });
  for (const left of readdirSync(dirname(dir)))
    if (left.startsWith(`${basename(dir)}.building-`) && abandoned(left))
      rmSync(join(dirname(dir), left), { recursive: true, force: true });
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  try {
    await make(building);
    try {
      renameSync(building, dir);
    } catch (err) {
      if (!isCluster(dir)) throw err; // unless another process put its own there first
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

/**
 * Makes the template once (PGlite's initdb, 2–4 s, which every new embedded database used to run
 * for itself) unless it is there. Everything in it is its owner's alone.
 */
export async function ensureTemplate(cache = cacheDir): Promise<string> {
  const dir = templateDir(cache);
  if (isCluster(dir)) return dir;
  return buildAside(dir, (building) => openCluster(building));
}

/**
 * Opens the cluster in `dir` (PGlite lays an empty one down where there is none), runs `use` on it,
 * closes it and makes every file in it its owner's alone. The database code is loaded only here:
 * the usual start finds its clusters made and needs none of it this early.
 */
async function openCluster(dir: string, use?: (db: Database) => Promise<unknown>): Promise<void> {
  const { openDatabase, restrictToOwner } = await import('@ziti/platform/db/database');
  const db = await openDatabase({ pgliteDir: dir });
  try {
    await use?.(db);
  } finally {
    await db.close();
  }
  restrictToOwner(dir);
}

/**
 * Makes a service's template: a copy of the empty template on which `migrate` applied the
 * service's migrations, schema and the fixed rows they insert, nothing else (no key, no secret, no
 * admin: those are made at first start, per data directory). A first start from it runs `migrate`
 * as ever, which finds every migration applied with the same checksum.
 */
export async function ensureServiceTemplate(
  name: EmbeddedDatabase,
  migrations = serviceMigrations(name),
  cache = cacheDir,
): Promise<string> {
  const { template } = servicePaths(name, migrations, cache);
  if (isCluster(template)) return template;
  const empty = await ensureTemplate(cache);
  const { migrate } = await import('@ziti/platform/db/migrations');
  return buildAside(template, async (building) => {
    await copyTree(empty, building);
    await openCluster(building, (db) => migrate(db, migrations));
  });
}

/**
 * Makes the ready copy of a service's template that the next first start moves into its data
 * directory in one rename instead of copying the template file by file (a cluster is about a
 * thousand files; creating them is most of what seeding costs). Used once: a first start takes it,
 * `--prepare` makes it again.
 */
export async function ensureReadyCopy(
  name: EmbeddedDatabase,
  migrations = serviceMigrations(name),
  cache = cacheDir,
): Promise<string> {
  const template = await ensureServiceTemplate(name, migrations, cache);
  const { ready } = servicePaths(name, migrations, cache);
  return buildAside(ready, (building) => copyTree(template, building));
}

/**
 * `--prepare`: the empty template, then each service's template and its ready copy, and removes
 * those of earlier migrations of the same PGlite version.
 */
export async function prepareTemplates(cache = cacheDir): Promise<string[]> {
  await ensureTemplate(cache);
  const names = Object.keys(embeddedDatabases) as EmbeddedDatabase[];
  const made = await Promise.all(names.map((name) => ensureReadyCopy(name, serviceMigrations(name), cache)));
  const keep = new Set(names.flatMap((name) => Object.values(servicePaths(name, serviceMigrations(name), cache))));
  const ours = new RegExp(
    `^(ready-)?pglite-${pgliteVersion().replaceAll('.', '\\.')}-(${names.join('|')})-[0-9a-f]{16}$`,
  );
  for (const entry of readdirSync(cache))
    if (ours.test(entry) && !keep.has(join(cache, entry))) rmSync(join(cache, entry), { recursive: true, force: true });
  return made;
}

const listings = new Map<string, { dirs: string[]; files: string[] }>();

/** A tree's directories and files (relative paths, parents first), listed once per process. */
function list(root: string): { dirs: string[]; files: string[] } {
  let found = listings.get(root);
  if (found) return found;
  found = { dirs: [], files: [] };
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) {
        found!.dirs.push(path);
        walk(path);
      } else if (entry.isFile()) found!.files.push(path);
    }
  };
  walk('');
  listings.set(root, found);
  return found;
}

/**
 * Copies a cluster to `to`: directories 0700, files with the template's 0600 (copyFile keeps
 * the mode), a few copies at a time on libuv's threads while the main thread goes on loading.
 */
async function copyTree(from: string, to: string): Promise<void> {
  const { dirs, files } = list(from);
  mkdirSync(to, { mode: 0o700 });
  for (const d of dirs) mkdirSync(join(to, d), { mode: 0o700 });
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const f = files[next++]!;
      await copyFile(join(from, f), join(to, f));
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
}

export type Seeded =
  { seeded: false; error?: unknown } | { seeded: true; from: 'ready copy' | 'service template' | 'empty template' };

/**
 * Lays a cluster down in `dataDir/name` when it is absent or empty, so the database opens instead of
 * running initdb, and its migrations find themselves applied: the service's ready copy moved in
 * (one rename), or else a copy of the service's template, or else of the empty template (another
 * file system, or migrations changed since `--prepare`: `migrate` applies them at start as it
 * always did). A directory that holds anything is left alone (an existing database, or whatever
 * PGlite makes of it as before). Copied aside and renamed into place: an interrupted copy is never
 * taken for a database. Never rejects: it answers what went wrong, and without a template PGlite
 * runs initdb as it always did.
 */
export async function seedDatabase(
  dataDir: string,
  name: EmbeddedDatabase,
  migrations = serviceMigrations(name),
  cache = cacheDir,
): Promise<Seeded> {
  const dir = join(dataDir, name);
  const seeding = join(dataDir, `.${name}.seeding-${process.pid}`);
  try {
    if (existsSync(dir) && readdirSync(dir).length > 0) return { seeded: false };
    // What an interrupted start left of its copy (under its own process id) goes first.
    for (const left of readdirSync(dataDir))
      if (left.startsWith(`.${name}.seeding-`)) rmSync(join(dataDir, left), { recursive: true, force: true });
    const { template, ready } = servicePaths(name, migrations, cache);
    if (isCluster(ready) && take(ready, seeding)) return placed(seeding, dir, 'ready copy');
    if (isCluster(template)) {
      await copyTree(template, seeding);
      return placed(seeding, dir, 'service template');
    }
    await copyTree(await ensureTemplate(cache), seeding);
    return placed(seeding, dir, 'empty template');
  } catch (error) {
    rmSync(seeding, { recursive: true, force: true });
    return { seeded: false, error };
  }
}

/** Moves the ready copy aside in one rename; false when another start took it first or it is on another file system. */
function take(ready: string, seeding: string): boolean {
  try {
    renameSync(ready, seeding);
    return true;
  } catch {
    return false;
  }
}

function placed(seeding: string, dir: string, from: 'ready copy' | 'service template' | 'empty template'): Seeded {
  if (existsSync(dir)) rmdirSync(dir); // only ever an empty directory
  renameSync(seeding, dir);
  return { seeded: true, from };
}
