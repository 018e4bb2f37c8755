import { type Database, migrate, openDatabase, queryRows } from '@ziti/platform';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, uniqueName } from '../../../../test/support/infra.ts';
import { emptier, storeTargets } from '../../../../test/support/store-contract.ts';
import { migrations } from '../app.ts';
import { PgSinkCheckpoint } from './checkpoints.store.ts';

/**
 * The shared sink checkpoint's contract (checkpoints.store.ts), on the real Postgres and on PGlite:
 * the greater position wins, every read is fresh, sinks do not share rows; on Postgres, one lease at
 * a time across replicas (two database handles stand for two audit processes).
 */
describe.each(storeTargets)('sink checkpoints on %s', (target) => {
  let database: Database;
  /** Another process's handle on the same database (PGlite: the same one, a single process opens it). */
  let replica: Database;
  let empty: () => Promise<void>;
  let drop = async () => undefined as void;

  beforeAll(async () => {
    if (target === 'postgres') {
      const db = await createTestDatabase('audit_ckpt');
      database = await openDatabase({ url: db.url, poolSize: 4 });
      replica = await openDatabase({ url: db.url, poolSize: 4 });
      drop = async () => {
        await replica.close();
        await database.close();
        await db.drop();
      };
    } else {
      database = await openDatabase({ pgliteMemory: true });
      replica = database;
      drop = () => database.close();
    }
    await migrate(database, migrations);
    empty = await emptier(database);
  });
  afterEach(async () => empty?.());
  afterAll(async () => drop());

  it('has no position before the first save, then the greatest ever saved', async () => {
    const checkpoint = new PgSinkCheckpoint(database, 'audit-sink-webhook');
    expect(checkpoint.shared).toBe(true);
    expect(await checkpoint.load()).toBeUndefined();
    await checkpoint.save(5);
    expect(await checkpoint.load()).toBe(5);
    // A replica that is behind saves a lower position: the checkpoint does not move back.
    await checkpoint.save(3);
    expect(await checkpoint.load()).toBe(5);
    await checkpoint.save(5);
    await checkpoint.save(2 ** 40);
    expect(await checkpoint.load()).toBe(2 ** 40);
  });

  it('reads afresh what another replica saved, and keeps each sink apart', async () => {
    const here = new PgSinkCheckpoint(database, 'audit-sink-webhook');
    const there = new PgSinkCheckpoint(replica, 'audit-sink-webhook');
    const other = new PgSinkCheckpoint(database, 'audit-sink-file');
    await here.save(10);
    expect(await there.load()).toBe(10);
    await there.save(12);
    expect(await here.load()).toBe(12);
    expect(await other.load()).toBeUndefined();
    await other.save(1);
    expect(await here.load()).toBe(12);
    const rows = await queryRows<{ name: string; position: string | number }>(
      database.db,
      'select name, position from sink_checkpoints order by name',
    );
    expect(rows.map((r) => [r.name, Number(r.position)])).toEqual([
      ['audit-sink-file', 1],
      ['audit-sink-webhook', 12],
    ]);
  });

  it('racing saves of two replicas end at the greatest position', async () => {
    const a = new PgSinkCheckpoint(database, 'audit-sink-webhook');
    const b = new PgSinkCheckpoint(replica, 'audit-sink-webhook');
    const positions = Array.from({ length: 40 }, (_, i) => ((i * 7919) % 40) + 1);
    await Promise.all(positions.map((p, i) => (i % 2 === 0 ? a : b).save(p)));
    expect(await a.load()).toBe(40);
    expect(await b.load()).toBe(40);
  });

  it('refuses what is not a position', async () => {
    const checkpoint = new PgSinkCheckpoint(database, 'audit-sink-webhook');
    for (const bad of [-1, 1.5, Number.NaN]) await expect(checkpoint.save(bad)).rejects.toThrow(/position/);
    expect(await checkpoint.load()).toBeUndefined();
  });

  if (target === 'pglite') {
    it('has no lease: one process opens the database, and a sink runs its batches one at a time', () => {
      expect(new PgSinkCheckpoint(database, 'audit-sink-webhook').lease).toBeUndefined();
    });
    return;
  }

  it('leases one batch at a time across replicas, and a lost connection loses the lease', async () => {
    const name = uniqueName('audit-sink-webhook');
    const a = new PgSinkCheckpoint(database, name);
    const b = new PgSinkCheckpoint(replica, name);
    const signal = new AbortController().signal;
    try {
      const first = await a.lease!(0, signal);
      expect(first).toBeDefined();
      expect(await first!.held()).toBe(true);
      // The other replica waits for it, and gets nothing within its wait.
      const began = Date.now();
      expect(await b.lease!(200, signal)).toBeUndefined();
      expect(Date.now() - began).toBeGreaterThanOrEqual(190);
      // Nor does another sink of this process on the same checkpoint (advisory locks are re-entrant).
      expect(await a.lease!(0, signal)).toBeUndefined();
      // Released while the other waits: it gets it then.
      const waiting = b.lease!(5_000, signal);
      await first!.release();
      expect(await first!.held()).toBe(false);
      const second = await waiting;
      expect(second).toBeDefined();
      expect(await a.lease!(50, signal)).toBeUndefined();

      // The holder's connection is cut (a failover, a network partition): it no longer holds the
      // lease, and the other replica takes it.
      await queryRows(
        database.db,
        `select pg_terminate_backend(pid) from pg_locks
          where locktype = 'advisory' and classid = 7355610 and objid::int = hashtext($1)
            and pid <> pg_backend_pid()`,
        [name],
      );
      expect(await second!.held()).toBe(false);
      await second!.release();
      const third = await a.lease!(5_000, signal);
      expect(third).toBeDefined();
      await third!.release();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('stops waiting for a lease when the sink stops', async () => {
    const name = uniqueName('audit-sink-webhook');
    const a = new PgSinkCheckpoint(database, name);
    const b = new PgSinkCheckpoint(replica, name);
    try {
      const held = await a.lease!(0, new AbortController().signal);
      const stop = new AbortController();
      const waiting = b.lease!(30_000, stop.signal);
      const began = Date.now();
      stop.abort();
      expect(await waiting).toBeUndefined();
      expect(Date.now() - began).toBeLessThan(1_000);
      await held!.release();
    } finally {
      await a.close();
      await b.close();
    }
  });
});
