import { createReadStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { type DatabaseService, databaseServices } from './cli.ts';

/**
 * A snapshot as `POST /database/snapshot` writes it (`snapshotDatabase`, packages/platform/src/maintenance.ts):
 * `ZITI_SNAPSHOT_DIR/<label>/<service>/manifest.json` with the row count of every table and the
 * migrations applied, beside one `<table>.jsonl` per table (one `row_to_json` per line).
 */
export interface ServiceSnapshot {
  service: DatabaseService;
  dir: string;
  label: string;
  takenAt: string;
  /** Table → rows. */
  tables: Record<string, number>;
  /** The migrations applied when it was taken (`schema_migrations`), sorted. */
  migrations: string[];
}

const tableName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Reads and checks one service folder's manifest; the problems found (none: the snapshot). */
function readServiceSnapshot(dir: string): ServiceSnapshot | string[] {
  const where = dir;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return [`${where}/manifest.json cannot be read${code ? ` (${code})` : ': not JSON'}`];
  }
  const m = raw as Partial<Record<keyof ServiceSnapshot, unknown>>;
  const problems: string[] = [];
  if (typeof m.service !== 'string' || !(databaseServices as readonly string[]).includes(m.service))
    problems.push(`${where}/manifest.json names no service of this build (${JSON.stringify(m.service)})`);
  const tables = m.tables;
  if (typeof tables !== 'object' || tables === null || Array.isArray(tables))
    problems.push(`${where}/manifest.json has no table counts`);
  else
    for (const [name, count] of Object.entries(tables)) {
      if (!tableName.test(name)) problems.push(`${where}/manifest.json names a table ${JSON.stringify(name)}`);
      else if (!Number.isInteger(count) || (count as number) < 0)
        problems.push(`${where}/manifest.json: the row count of ${name} is not a count`);
      else if (!existsSync(join(dir, `${name}.jsonl`))) problems.push(`${where}/${name}.jsonl is missing`);
    }
  if (!Array.isArray(m.migrations) || !m.migrations.every((v) => typeof v === 'string'))
    problems.push(`${where}/manifest.json lists no migrations`);
  if (problems.length > 0) return problems;
  return {
    service: m.service as DatabaseService,
    dir,
    label: typeof m.label === 'string' ? m.label : basename(dirname(dir)),
    takenAt: typeof m.takenAt === 'string' ? m.takenAt : 'unknown',
    tables: tables as Record<string, number>,
    migrations: [...(m.migrations as string[])].sort(),
  };
}

/**
 * The snapshot `path` names: a `<label>` folder (one folder per service in it), one service's
 * folder, or a `manifest.json`. Answers the services' snapshots, or every problem found.
 */
export function findSnapshot(path: string): { snapshots: ServiceSnapshot[] } | { problems: string[] } {
  const full = resolve(path);
  if (!existsSync(full)) return { problems: [`${path}: no such file or folder`] };
  let dirs: string[];
  if (statSync(full).isFile()) {
    if (basename(full) !== 'manifest.json') return { problems: [`${path} is not a snapshot's manifest.json`] };
    dirs = [dirname(full)];
  } else if (existsSync(join(full, 'manifest.json'))) {
    dirs = [full];
  } else {
    dirs = readdirSync(full, { withFileTypes: true })
      .filter((e) => e.isDirectory() && existsSync(join(full, e.name, 'manifest.json')))
      .map((e) => join(full, e.name))
      .sort();
    if (dirs.length === 0)
      return {
        problems: [
          `${path} holds no snapshot: expected <label>/<service>/manifest.json as POST /database/snapshot writes`,
        ],
      };
  }
  const snapshots: ServiceSnapshot[] = [];
  const problems: string[] = [];
  for (const dir of dirs) {
    const read = readServiceSnapshot(dir);
    if (Array.isArray(read)) problems.push(...read);
    else if (snapshots.some((s) => s.service === read.service))
      problems.push(`${path} holds two snapshots of ${read.service}`);
    else snapshots.push(read);
  }
  return problems.length > 0 ? { problems } : { snapshots };
}

/** The rows of one table file, in batches of at most `rows` lines or about `bytes`, as JSON array text. */
export async function* tableBatches(
  snapshot: ServiceSnapshot,
  table: string,
  rows = 500,
  bytes = 4 * 1024 * 1024,
): AsyncGenerator<{ json: string; count: number }> {
  const lines = createInterface({ input: createReadStream(join(snapshot.dir, `${table}.jsonl`)), crlfDelay: Infinity });
  let batch: string[] = [];
  let size = 0;
  for await (const line of lines) {
    if (line.trim() === '') continue;
    batch.push(line);
    size += line.length;
    if (batch.length >= rows || size >= bytes) {
      yield { json: `[${batch.join(',')}]`, count: batch.length };
      batch = [];
      size = 0;
    }
  }
  if (batch.length > 0) yield { json: `[${batch.join(',')}]`, count: batch.length };
}
