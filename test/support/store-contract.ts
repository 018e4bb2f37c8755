import { ApiError } from '@ziti/contracts';
import { type Database, type LockOption, queryRows } from '@ziti/platform';
import { expect } from 'vitest';
import { waitFor } from './infra.ts';

/**
 * What the store contract suites share (services/<svc>/test/stores.int.test.ts): each case runs on
 * the real Postgres and on PGlite (npm start's), and the same SQL must behave the same on both.
 */
export const storeTargets = ['postgres', 'pglite'] as const;

/** A fixed instant, `ms` after 2026-01-01 UTC. */
export const at = (ms = 0) => new Date(Date.UTC(2026, 0, 1) + ms);

/** Byte order, as Postgres' "C" collation and the reference's store sort. */
export const bytewise = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Tags with their counter `n` one higher: what two racing read-modify-writes both add to. */
export const counter = (tags: Record<string, unknown>) => ({ ...tags, n: Number(tags.n ?? 0) + 1 });

/** The rejection of `p` (fails when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

/** The ApiError `p` rejects with, as code and cause. */
export async function apiError(p: Promise<unknown>): Promise<{ code: string; cause: unknown }> {
  const err = await rejection(p);
  expect(err).toBeInstanceOf(ApiError);
  return { code: (err as ApiError).code, cause: (err as ApiError).cause };
}

/**
 * Empties every table that was empty once migrated (what the cases write), keeping the migrations'
 * bookkeeping and seeded rows. No `cascade`: a seeded table that refers to an emptied one fails loudly.
 */
export async function emptier(database: Database): Promise<() => Promise<void>> {
  const tables = await queryRows<{ name: string }>(
    database.db,
    'select tablename as name from pg_tables where schemaname = current_schema() order by 1',
  );
  const empty: string[] = [];
  for (const { name } of tables) {
    const [row] = await queryRows<{ filled: boolean }>(
      database.db,
      `select exists (select 1 from "${name}") as filled`,
    );
    if (!row!.filled) empty.push(`"${name}"`);
  }
  return async () => {
    await queryRows(database.db, `truncate ${empty.join(', ')} restart identity`);
  };
}

/**
 * Resolves once another transaction waits for a row lock. Postgres shows the waiter in
 * pg_stat_activity; PGlite runs one transaction at a time, so there the second one queues before it
 * reaches the database and nothing is there to observe.
 */
export async function rowLockWaiter(database: Database): Promise<void> {
  if (database.kind === 'pglite') return;
  await waitFor(
    async () =>
      (
        await queryRows<{ n: number }>(
          database.db,
          `select count(*)::int as n from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'`,
        )
      )[0]!.n > 0,
    'a transaction waiting for the row lock',
    5_000,
    10,
  );
}

/**
 * Two read-modify-writes of one row through `read` (with `forUpdate`) and `write`, the second
 * started while the first holds the row: the second must read the first's write.
 */
export async function lockedReadModifyWrites<S, T>(
  work: <R>(fn: (stores: S) => Promise<R>) => Promise<R>,
  database: Database,
  read: (s: S, lock: LockOption) => Promise<T | null>,
  write: (s: S, row: T) => Promise<void>,
): Promise<void> {
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const first = work(async (s) => {
    const row = await read(s, { forUpdate: true });
    held();
    await released;
    await write(s, row!);
  });
  try {
    await holding;
    const second = work(async (s) => write(s, (await read(s, { forUpdate: true }))!));
    await rowLockWaiter(database);
    release();
    await Promise.all([first, second]);
  } finally {
    release();
    await first.catch(() => undefined);
  }
}
