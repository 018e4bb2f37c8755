import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where `npm start` keeps what it makes once per install: the ahead-of-time bundle
 * (apps/standalone/start.mjs) and the template database cluster. Under node_modules, so
 * `npm ci` starts it afresh and no linter, formatter or git sees it.
 */
export const cacheDir = fileURLToPath(new URL('../../../node_modules/.cache/ziti-standalone/', import.meta.url));

function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const pkg = JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The template for this PGlite version: an empty cluster exactly as a first open lays it down. */
export function templateDir(): string {
  return join(cacheDir, `pglite-${pgliteVersion()}`);
}

const isCluster = (dir: string) => existsSync(join(dir, 'PG_VERSION'));

/**
 * Makes the template once (PGlite's initdb, 2–4 s, which every new embedded database used to run
 * for itself) unless it is there. Built aside and renamed into place, so a concurrent or
 * interrupted run never leaves half a template. Everything in it is its owner's alone.
 */
export async function ensureTemplate(): Promise<string> {
  const dir = templateDir();
  if (isCluster(dir)) return dir;
  // Loaded only here: the usual start finds the template and needs none of it this early.
  const { openDatabase, restrictToOwner } = await import('@ziti/platform/db/database');
  mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  try {
    const db = await openDatabase({ pgliteDir: building });
    await db.close();
    restrictToOwner(building);
    try {
      renameSync(building, dir);
    } catch (err) {
      if (!isCluster(dir)) throw err; // unless another process put its template there first
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

let template: Promise<string> | undefined;
let listing: { dirs: string[]; files: string[] } | undefined;

/** The template's directories and files (relative paths, parents first), listed once. */
function list(root: string): { dirs: string[]; files: string[] } {
  const dirs: string[] = [];
  const files: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) {
        dirs.push(path);
        walk(path);
      } else if (entry.isFile()) files.push(path);
    }
  };
  walk('');
  return { dirs, files };
}

/**
 * Copies the template to `to`: directories 0700, files with the template's 0600 (copyFile keeps
 * the mode), a few copies at a time on libuv's threads while the main thread goes on loading.
 */
async function copyTemplate(from: string, to: string): Promise<void> {
  const { dirs, files } = (listing ??= list(from));
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

/**
 * Lays an empty cluster down in `dir` from the template when `dir` is absent or empty, so the
 * database opens instead of running initdb. A directory that holds anything is left alone (an
 * existing database, or whatever PGlite makes of it as before). Copied aside and renamed into
 * place: an interrupted copy is never taken for a database. Never rejects: it answers what went
 * wrong, and without a template PGlite runs initdb in `dir` as it always did.
 */
export async function seedFromTemplate(dir: string): Promise<{ seeded: boolean; error?: unknown }> {
  const seeding = join(dirname(dir), `.${basename(dir)}.seeding-${process.pid}`);
  try {
    if (existsSync(dir) && readdirSync(dir).length > 0) return { seeded: false };
    const from = await (template ??= ensureTemplate());
    // What an interrupted start left of its copy (under its own process id) goes first.
    for (const left of readdirSync(dirname(dir)))
      if (left.startsWith(`.${basename(dir)}.seeding-`))
        rmSync(join(dirname(dir), left), { recursive: true, force: true });
    await copyTemplate(from, seeding);
    if (existsSync(dir)) rmdirSync(dir); // only ever an empty directory
    renameSync(seeding, dir);
    return { seeded: true };
  } catch (error) {
    rmSync(seeding, { recursive: true, force: true });
    return { seeded: false, error };
  }
}
