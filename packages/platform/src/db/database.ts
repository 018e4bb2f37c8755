import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';

/** A drizzle database or transaction, whichever driver is underneath. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema type is chosen by each service
export type Db = PgDatabase<PgQueryResultHKT, any>;

export interface Database {
  db: Db;
  /** Runs `fn` in one transaction; the caller owns it and the events of the change leave through it. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /** One dedicated connection, for work that needs session state (advisory locks, scripts). */
  withConnection<T>(fn: (conn: RawConnection) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}

export interface RawConnection {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a multi-statement script. */
  exec(script: string): Promise<void>;
}

export type DatabaseConfig = { url: string; poolSize?: number } | { pgliteDir: string } | { pgliteMemory: true };

export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  if ('url' in config) {
    const pool = new pg.Pool({ connectionString: config.url, max: config.poolSize ?? 10 });
    pool.on('error', () => {
      // An idle client lost its connection; the pool replaces it on next use.
    });
    const db = drizzlePg(pool) as unknown as Db;
    return {
      db,
      kind: 'postgres',
      transaction: (fn) => db.transaction((tx) => fn(tx as unknown as Db)),
      withConnection: async (fn) => {
        const client = await pool.connect();
        try {
          return await fn({
            query: async (text, params) => (await client.query(text, params)).rows,
            exec: async (script) => {
              await client.query(script);
            },
          });
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  let client: PGlite;
  if ('pgliteDir' in config) {
    mkdirSync(config.pgliteDir, { recursive: true });
    client = await PGlite.create(config.pgliteDir);
  } else {
    client = await PGlite.create();
  }
  const db = drizzlePglite(client) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    transaction: (fn) => db.transaction((tx) => fn(tx as unknown as Db)),
    withConnection: (fn) =>
      fn({
        query: async <T>(text: string, params?: unknown[]) => (await client.query<T>(text, params)).rows,
        exec: async (script) => {
          await client.exec(script);
        },
      }),
    close: () => client.close(),
  };
}

/** Builds a drizzle SQL object from text with `$1…$n` placeholders (what the ZitiQL translator emits). */
export function positionalSql(text: string, params: readonly unknown[]): SQL {
  const chunks: SQL[] = [];
  const re = /\$(\d+)/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    chunks.push(sql.raw(text.slice(last, m.index)));
    const index = Number(m[1]) - 1;
    if (index < 0 || index >= params.length) throw new Error(`placeholder $${m[1]} has no parameter`);
    chunks.push(sql`${sql.param(params[index])}`);
    last = m.index + m[0].length;
  }
  chunks.push(sql.raw(text.slice(last)));
  return sql.join(chunks);
}

/** Runs raw SQL with positional parameters and returns its rows. */
export async function queryRows<T = Record<string, unknown>>(
  db: Db,
  text: string,
  params: readonly unknown[] = [],
): Promise<T[]> {
  const result = (await db.execute(positionalSql(text, params))) as unknown as { rows: T[] };
  return result.rows;
}
