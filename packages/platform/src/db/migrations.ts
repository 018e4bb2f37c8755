import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from './database.ts';

export interface Migration {
  version: string;
  sql: string;
}

/** Reads `NNNN_name.sql` files of a folder, in order. */
export function readMigrations(dir: string | URL, prefix = ''): Migration[] {
  const path = dir instanceof URL ? dir.pathname : dir;
  if (!existsSync(path)) return [];
  return readdirSync(path)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: prefix + f.replace(/\.sql$/, ''), sql: readFileSync(join(path, f), 'utf8') }));
}

/** The platform's own tables (outbox, processed events) that every service database has. */
export const platformMigrations: Migration[] = readMigrations(new URL('./migrations/', import.meta.url), 'platform:');

const checksum = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Applies migrations append-only: each once, in order, in its own transaction, under an advisory
 * lock so replicas starting together do not race. A migration whose text changed after it was
 * applied stops the service: migrations are reviewed history, never edited.
 */
export async function migrate(database: Database, migrations: Migration[]): Promise<string[]> {
  const all = [...platformMigrations, ...migrations];
  const applied: string[] = [];
  await database.withConnection(async (conn) => {
    await conn.query('select pg_advisory_lock(7355608)');
    try {
      await conn.exec(
        `create table if not exists schema_migrations (
           version text primary key, checksum text not null, applied_at timestamptz not null default now())`,
      );
      const rows = await conn.query<{ version: string; checksum: string }>(
        'select version, checksum from schema_migrations',
      );
      const done = new Map(rows.map((r) => [r.version, r.checksum]));
      for (const m of all) {
        const sum = checksum(m.sql);
        const existing = done.get(m.version);
        if (existing) {
          if (existing !== sum) throw new Error(`migration ${m.version} was changed after it was applied`);
          continue;
        }
        await conn.exec('begin');
        try {
          await conn.exec(m.sql);
          await conn.query('insert into schema_migrations (version, checksum) values ($1, $2)', [m.version, sum]);
          await conn.exec('commit');
        } catch (err) {
          await conn.exec('rollback');
          throw new Error(`migration ${m.version} failed: ${(err as Error).message}`);
        }
        applied.push(m.version);
      }
    } finally {
      await conn.query('select pg_advisory_unlock(7355608)');
    }
  });
  return applied;
}
