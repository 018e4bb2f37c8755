import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { entityKind } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import pg from 'pg';
import { watchPool } from '../metrics.ts';
import { SaturatedError, refusable } from '../causality.ts';
import { DependencyUnavailableError } from '../unavailable.ts';
import { usePreparedStatements } from './pglite-prepared.ts';

/** A drizzle database or transaction, whichever driver is underneath. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the schema type is chosen by each service
export type Db = PgDatabase<PgQueryResultHKT, any>;

export interface Database {
  db: Db;
  /** Runs `fn` in one transaction; the caller owns it and the events of the change leave through it. */
  transaction<T>(fn: (tx: Db) => Promise<T>): Promise<T>;
  /** One dedicated connection, for work that needs session state (advisory locks, scripts). */
  withConnection<T>(fn: (conn: RawConnection) => Promise<T>): Promise<T>;
  /**
   * A connection kept until released, for state that must outlive one call (the relay's
   * leadership lock). A broken connection rejects its next query; the holder then releases it.
   */
  session(): Promise<DatabaseSession>;
  /**
   * Calls `onNotify` for every NOTIFY on `channel` (sent at commit by any process on this
   * database). Returns the unsubscribe. Delivery is best effort: a reconnect may miss some, so
   * listeners pair it with a periodic check.
   */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  readonly kind: 'postgres' | 'pglite';
}

export interface RawConnection {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** Runs a multi-statement script. */
  exec(script: string): Promise<void>;
}

export interface DatabaseSession {
  /** `prepare` as `queryRows`' (a named statement on Postgres; PGlite prepares repeated ones itself). */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], options?: QueryOptions): Promise<T[]>;
  release(broken?: boolean): void;
}

/** `service` names a Postgres pool in the metrics (`ziti_db_pool_*{service}`); an unnamed pool is not reported. */
export type DatabaseConfig =
  { url: string; poolSize?: number; service?: string } | { pgliteDir: string } | { pgliteMemory: true };

/** Extensions migrations may create under `npm start` (a cluster's Postgres ships them as contrib). */
const embeddedExtensions = { pg_trgm };
/**
 * PGlite's start parameters with shared_buffers at 16 MB instead of the 128 MB initdb writes: an
 * embedded database's open time and resident memory grow with it (128 MB: ~0.5 s and ~150 MiB per
 * database; 16 MB: ~0.15 s and ~20 MiB), and the embedded data is small.
 */
const embeddedStartParams = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/**
 * PGlite's WebAssembly module, compiled once per process, and its file-system bundle, read once:
 * each embedded database is its own instance of them (its own memory and files). Left to itself,
 * each PGlite reads the 9 MB module and the 6 MB bundle and compiles and optimizes the module for
 * itself; `npm start` opens five at once (shared: ~0.2 s less CPU over the five, docs/BENCHMARKS.md).
 */
let pgliteArtifacts: Promise<{ pgliteWasmModule: WebAssembly.Module; fsBundle: Blob }> | undefined;

/** The runtime's WebAssembly (its types declare the namespace but not the value). */
const wasmCompiler = () =>
  (globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WebAssembly.Module> } }).WebAssembly;

export function sharedPgliteArtifacts(): Promise<{ pgliteWasmModule: WebAssembly.Module; fsBundle: Blob }> {
  if (pgliteArtifacts) return pgliteArtifacts;
  const loading = (async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));
    const [wasm, data] = await Promise.all([readFile(join(dist, 'pglite.wasm')), readFile(join(dist, 'pglite.data'))]);
    return { pgliteWasmModule: await wasmCompiler().compile(wasm), fsBundle: new Blob([data]) };
  })();
  pgliteArtifacts = loading;
  // A failure is not kept: the next open tries again.
  loading.catch(() => {
    if (pgliteArtifacts === loading) pgliteArtifacts = undefined;
  });
  return loading;
}

export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  if ('url' in config) {
    const pool = new pg.Pool({ connectionString: config.url, max: config.poolSize ?? 10, keepAlive: true });
    /** Requests' transactions that may wait for a connection at once (beyond: refused up front). */
    const maxQueued = 4 * (config.poolSize ?? 10);
    pool.on('error', () => {
      // An idle client lost its connection; the pool drops it and connects anew on next use.
    });
    // Every client keeps a listener for its whole life: a dropped connection can emit more than one
    // 'error' (pg-pool's own `query` listens `once`, and not after it released the client), and an
    // 'error' nobody hears ends the process. The query in progress is rejected either way and a
    // client that failed is not reused.
    pool.on('connect', (client) => {
      client.on('error', () => undefined);
    });
    const db = drizzlePg(pool) as unknown as Db;
    const notifications = new PgNotifications(config.url);
    const unwatch = config.service ? watchPool(config.service, pool) : undefined;
    return {
      db,
      kind: 'postgres',
      transaction: async (fn) => {
        // Admission: a request's write that would queue behind `maxQueued` others for a connection
        // is refused now, having done nothing (503, Retry-After), instead of waiting towards its
        // deadline; background work (consumers) always queues.
        if (pool.waitingCount >= maxQueued && refusable()) throw new SaturatedError('a database connection');
        // drizzle's pool transaction keeps a client whose BEGIN failed and has no error listener
        // while it holds one: the transaction runs on a client held here instead.
        const held = await checkOut(pool);
        try {
          return await drizzlePg(held.client).transaction((tx) => fn(tx as unknown as Db));
        } finally {
          held.release();
        }
      },
      withConnection: async (fn) => {
        const held = await checkOut(pool);
        try {
          return await fn({
            query: async (text, params) => (await held.client.query(text, params)).rows,
            exec: async (script) => {
              await held.client.query(script);
            },
          });
        } finally {
          held.release();
        }
      },
      session: async () => {
        const held = await checkOut(pool);
        return {
          query: async (text, params, options) =>
            (
              await held.client.query(
                options?.prepare ? { text, values: params, name: preparedName(text) } : { text, values: params },
              )
            ).rows,
          // A broken connection (or one holding session locks) is closed, not returned to the pool.
          release: (broken = false) => held.release(broken ? new Error('session closed') : true),
        };
      },
      listen: (channel, onNotify) => notifications.listen(channel, onNotify),
      close: async () => {
        unwatch?.();
        await notifications.close();
        await pool.end();
      },
    };
  }
  let client: PGlite;
  const dir = 'pgliteDir' in config ? config.pgliteDir : undefined;
  const options = {
    ...(await sharedPgliteArtifacts()),
    extensions: embeddedExtensions,
    startParams: embeddedStartParams,
  };
  if (dir) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    client = await PGlite.create(dir, options);
    // PGlite lays its files down with the modes of its bundled data directory (0666).
    restrictToOwner(dir);
  } else {
    client = await PGlite.create(options);
  }
  // `queryRows`' value types (dates and intervals as text) become the instance's own: PGlite merges
  // a query's `parsers` into a copy of all ~320 of the instance's for every query (0.05–0.1 ms a
  // statement, the largest JS cost of a write under `npm start`). Set after the start, since PGlite
  // makes its array parsers then. Raw connections and sessions keep PGlite's defaults, as before.
  const rawParsers = Object.fromEntries([...textTypes].map((t) => [t, client.parsers[t]!]));
  Object.assign(client.parsers, pgliteTextParsers);
  // Repeated statements run prepared (parse and plan once): most of a write's cost here.
  usePreparedStatements(client);
  const rawQuery = async <T>(text: string, params?: unknown[]) =>
    (await client.query<T>(text, params, { parsers: rawParsers })).rows;
  const db = drizzlePglite(client) as unknown as Db;
  return {
    db,
    kind: 'pglite',
    transaction: (fn) => db.transaction((tx) => fn(tx as unknown as Db)),
    withConnection: (fn) =>
      fn({
        query: rawQuery,
        exec: async (script) => {
          await client.exec(script);
        },
      }),
    session: async () => ({
      query: rawQuery,
      release: () => undefined,
    }),
    listen: async (channel, onNotify) => {
      const unsubscribe = await client.listen(channel, onNotify);
      return async () => unsubscribe();
    },
    close: async () => {
      await client.close();
      if (dir) restrictToOwner(dir);
    },
  };
}

/**
 * Makes a directory tree its owner's alone: directories 0700, files 0600 (symbolic links are
 * left alone). For embedded databases and kept secrets, which no other local user may read.
 */
export function restrictToOwner(dir: string): void {
  chmodSync(dir, 0o700);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) restrictToOwner(path);
    else if (entry.isFile()) chmodSync(path, 0o600);
  }
}

/**
 * A pooled client with an error listener for as long as it is held: a connection that drops
 * (a failover, `pg_terminate_backend`) rejects the query in progress or the next one, and never
 * raises an unhandled `'error'` that would end the process. Released once; a client whose
 * connection failed is dropped by the pool, not reused.
 */
async function checkOut(
  pool: pg.Pool,
): Promise<{ client: pg.PoolClient; release: (destroy?: Error | boolean) => void }> {
  const client = await pool.connect().catch((err: unknown) => {
    throw new DependencyUnavailableError('database', err);
  });
  let lost: Error | undefined;
  const onError = (err: Error) => {
    lost ??= err;
  };
  client.on('error', onError);
  let released = false;
  return {
    client,
    release: (destroy) => {
      if (released) return;
      released = true;
      client.removeListener('error', onError);
      client.release(lost ?? destroy);
    },
  };
}

/**
 * One LISTEN connection per database handle, shared by every channel, reconnecting (and
 * re-listening) after a failure. Notifications are hints to re-check state, never the only path.
 */
class PgNotifications {
  private client?: pg.Client;
  private connecting?: Promise<pg.Client>;
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private closed = false;

  constructor(private readonly url: string) {}

  private connect(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= (async () => {
      const client = new pg.Client({ connectionString: this.url, keepAlive: true });
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      client.on('notification', (n) => {
        for (const l of this.listeners.get(n.channel) ?? []) l(n.payload ?? '');
      });
      await client.connect();
      for (const channel of this.listeners.keys()) await client.query(`listen ${quoteIdent(channel)}`);
      this.client = client;
      return client;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.closed || this.listeners.size === 0) return;
    const retry = () => {
      if (this.closed) return;
      this.connect().catch(() => setTimeout(retry, 1_000).unref());
    };
    setTimeout(retry, 250).unref();
  }

  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    const fresh = !set;
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
    }
    set.add(onNotify);
    const client = await this.connect();
    if (fresh) await client.query(`listen ${quoteIdent(channel)}`);
    return async () => {
      set.delete(onNotify);
      if (set.size === 0) {
        this.listeners.delete(channel);
        await this.client?.query(`unlisten ${quoteIdent(channel)}`).catch(() => undefined);
      }
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }
}

function quoteIdent(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a channel name: ${name}`);
  return `"${name}"`;
}

/**
 * A statement that failed: its text (never its parameters, which may be secrets) and the driver's
 * error as the cause (SQLSTATE, constraint).
 */
export class QueryError extends Error {
  constructor(
    readonly query: string,
    cause: unknown,
  ) {
    super(`Failed query: ${query}`, { cause });
    this.name = 'QueryError';
  }
}

/** Dates and intervals as Postgres writes them, as drizzle's raw `execute` answers them (callers parse them). */
const textTypes = new Set<number>([
  pg.types.builtins.TIMESTAMPTZ,
  pg.types.builtins.TIMESTAMP,
  pg.types.builtins.DATE,
  pg.types.builtins.INTERVAL,
  1231, // numeric[]
  1115, // timestamp[]
  1185, // timestamptz[]
  1187, // interval[]
  1182, // date[]
]);
const asText = (value: string) => value;
const pgTextTypes = {
  getTypeParser: ((typeId: number, format?: 'text' | 'binary') =>
    textTypes.has(typeId) ? asText : pg.types.getTypeParser(typeId, format)) as typeof pg.types.getTypeParser,
};
const pgliteTextParsers = Object.fromEntries([...textTypes].map((t) => [t, asText]));
/** `queryRows` on PGlite: the instance's parsers are the text ones already (`openDatabase`). */
const pgliteQueryOptions = { rowMode: 'object' } as const;

interface DriverClient {
  query(...args: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Which driver a drizzle database or transaction runs on, and its client (pool, pooled client, PGlite). */
function driverOf(db: Db): { client: DriverClient; pglite: boolean } {
  const session = (db as unknown as { session: { client: DriverClient; constructor: Record<symbol, unknown> } })
    .session;
  const kind = session.constructor[entityKind];
  return { client: session.client, pglite: kind === 'PgliteSession' || kind === 'PgliteTransaction' };
}

/**
 * Whether `db` runs on the embedded PGlite (`npm start`): one connection, so a transaction there
 * holds the whole database and nothing else runs beside it (no lock to wait for, no timeout to set).
 */
export function isEmbedded(db: Db): boolean {
  return driverOf(db).pglite;
}

/**
 * A statement with every placeholder occurrence numbered on its own (`$1 … $k` in text order) and
 * which parameter each takes: a parameter used twice is typed once per use, so `$3` may be a
 * bigint in one place and compared as text in another (drizzle's SQL builder did the same).
 */
interface Numbered {
  text: string;
  order: number[];
  /** The name of its prepared statement (`prepare`), made on first use. */
  name?: string;
}
const numbered = new Map<string, Numbered>();
const maxNumbered = 2_000;

function numberPlaceholders(text: string, paramCount: number): Numbered {
  let found = numbered.get(text);
  if (!found) {
    const order: number[] = [];
    const out = text.replace(/\$(\d+)/g, (_m, n: string) => {
      order.push(Number(n) - 1);
      return `$${order.length}`;
    });
    found = { text: out, order };
    if (numbered.size >= maxNumbered) numbered.clear();
    numbered.set(text, found);
  }
  for (const index of found.order)
    if (index < 0 || index >= paramCount) throw new Error(`placeholder $${index + 1} has no parameter`);
  return found;
}

export interface QueryOptions {
  /**
   * Run it as a named prepared statement on Postgres (parsed and planned once per connection, then
   * only bound and executed; PGlite prepares every repeated statement itself, pglite-prepared.ts). Only for statements whose text is fixed in the
   * code, never built from a request: a connection keeps each one it prepared for its life. It
   * must name its columns (no `*`): once a migration adds a column, Postgres refuses to run a
   * statement prepared before it whose result would change ("cached plan must not change result
   * type"), which a replica of the previous version would meet during a rolling upgrade.
   */
  prepare?: boolean;
}

/** A prepared statement's name: a function of its text, so one name never meets two texts. */
function preparedName(text: string): string {
  return `zq_${createHash('sha1').update(text).digest('hex').slice(0, 24)}`;
}

/**
 * Runs raw SQL with positional parameters and returns its rows. It goes to the driver directly
 * (drizzle's SQL builder spent more CPU than the query on hot paths), inside the caller's
 * transaction when `db` is one, with the same value types as drizzle's raw `execute`.
 */
export async function queryRows<T = Record<string, unknown>>(
  db: Db,
  text: string,
  params: readonly unknown[] = [],
  options: QueryOptions = {},
): Promise<T[]> {
  const { client, pglite } = driverOf(db);
  const statement = numberPlaceholders(text, params.length);
  const values = statement.order.map((i) => params[i]);
  try {
    const result = pglite
      ? await client.query(statement.text, values, pgliteQueryOptions)
      : await client.query({
          text: statement.text,
          values,
          types: pgTextTypes,
          ...(options.prepare ? { name: (statement.name ??= preparedName(statement.text)) } : {}),
        });
    return result.rows as T[];
  } catch (err) {
    throw new QueryError(text, err);
  }
}
