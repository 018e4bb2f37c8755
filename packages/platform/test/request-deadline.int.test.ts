import { ApiError } from '@ziti/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type Database,
  InProcessBus,
  NatsBus,
  RequestTimeoutError,
  createLogger,
  inEventTransaction,
  migrate,
  openDatabase,
  queryRows,
  remainingBudgetMs,
} from '../src/index.ts';
import { createTestDatabase, infra, uniqueName, waitFor } from '../../../test/support/infra.ts';

/**
 * Issue 35 item 2: a write never ends in an ambiguous 503. A bus request carries its deadline
 * (`Ziti-Deadline`: the budget and until when); the owner does not start a write past it (less a
 * margin for the commit and the answer), rolls back one that would commit past it, and answers that
 * nothing happened (503 SERVICE_UNAVAILABLE, cause NOT_CARRIED_OUT); a caller that already gave up
 * (503 TIMEOUT) never sees the write happen afterwards. Calls made on the work's behalf wait no
 * longer than it has left.
 */
const logger = createLogger('test', 'silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of ['nats', 'memory'] as const) {
  describe(`a write with a deadline on ${kind === 'nats' ? 'NATS + Postgres' : 'the in-process bus + PGlite'}`, () => {
    let bus: Bus;
    let db: Database;
    let drop = async () => undefined as void;
    let url = '';
    /** Each write's work by name, settled (the test waits for it before looking at the table). */
    const done = new Map<string, Promise<unknown>>();
    let nestedBudget: number | undefined;

    beforeAll(async () => {
      if (kind === 'nats') {
        const made = await createTestDatabase('deadline');
        drop = made.drop;
        url = made.url;
        db = await openDatabase({ url: made.url, poolSize: 4 });
        bus = await NatsBus.connect({ url: infra.natsUrl, name: 'test', namespace: uniqueName('dl'), logger });
      } else {
        db = await openDatabase({ pgliteMemory: true });
        bus = new InProcessBus();
      }
      await migrate(db, [{ version: '0001_things', sql: 'create table things (name text primary key);' }]);
      bus.serve('test.write', 'test', async (payload) => {
        const p = payload as { name: string; before: number; inside: number };
        const work = (async () => {
          await sleep(p.before);
          await inEventTransaction(db, 'auth', undefined, async (tx) => {
            await queryRows(tx, 'insert into things (name) values ($1)', [p.name]);
            await sleep(p.inside);
          });
          return { wrote: p.name };
        })();
        done.set(
          p.name,
          work.catch(() => undefined),
        );
        return work;
      });
      bus.serve('test.outer', 'test', async (payload) => {
        const p = payload as { before: number };
        await sleep(p.before);
        nestedBudget = remainingBudgetMs();
        return bus.request('test.inner', {}, { timeoutMs: 10_000 });
      });
      bus.serve('test.inner', 'test', async () => ({ budget: remainingBudgetMs() }));
    });
    afterAll(async () => {
      await bus?.close();
      await db?.close();
      await drop();
    });

    const rows = async (name: string) =>
      (await queryRows<{ n: number }>(db.db, 'select count(*)::int as n from things where name = $1', [name]))[0]!.n;
    const write = (name: string, before: number, inside: number, timeoutMs: number) =>
      bus.request('test.write', { name, before, inside }, { timeoutMs }).then(
        (r) => ({ ok: true as const, r }),
        (err: unknown) => ({ ok: false as const, err }),
      );
    const notCarriedOut = (err: unknown) =>
      err instanceof ApiError &&
      err.code === 'SERVICE_UNAVAILABLE' &&
      (err.cause as { code?: string } | undefined)?.code === 'NOT_CARRIED_OUT';

    it('is carried out when it finishes in time', async () => {
      const name = uniqueName('in-time');
      const out = await write(name, 0, 0, 5_000);
      expect(out.ok).toBe(true);
      expect(await rows(name)).toBe(1);
    });

    it('is not started once its caller gave up, and the caller is told nothing happened', async () => {
      // The caller waits 1 s; the write would start after 1.2 s (a queue, a starved process).
      const name = uniqueName('late-start');
      const out = await write(name, 1_200, 0, 1_000);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(out.err).toBeInstanceOf(RequestTimeoutError);
      await done.get(name);
      // Was: the write ran after the caller's 503 TIMEOUT, which then meant "it may have happened".
      expect(await rows(name)).toBe(0);
    });

    it('is refused while its caller still waits, when too little time is left to finish', async () => {
      // Budget 2 s, margin 200 ms: a start after 1.85 s is refused, and the refusal arrives in time.
      const name = uniqueName('refused');
      const out = await write(name, 1_850, 0, 2_000);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(notCarriedOut(out.err), String(out.err)).toBe(true);
      await done.get(name);
      expect(await rows(name)).toBe(0);
    });

    it('is rolled back, not committed late, when its work ran past the deadline', async () => {
      const name = uniqueName('rolled-back');
      const out = await write(name, 0, 1_900, 2_000);
      expect(out.ok).toBe(false);
      if (!out.ok) expect(notCarriedOut(out.err), String(out.err)).toBe(true);
      await done.get(name);
      expect(await rows(name)).toBe(0);
    });

    it.skipIf(kind === 'memory')(
      'is refused at once, having done nothing, when too many already wait for a database connection',
      async () => {
        // The pool's 4 connections held for 1 s; 16 (4 × the pool) may queue behind them, the rest are refused.
        const holds = Array.from({ length: 4 }, (_, i) => write(uniqueName(`hold-${i}`), 0, 1_000, 10_000));
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        try {
          await waitFor(
            async () =>
              (
                await admin.query(
                  "select count(*)::int as n from pg_stat_activity where datname = current_database() and state = 'idle in transaction'",
                )
              ).rows[0].n === 4,
            'the four holds in their transactions',
          );
        } finally {
          await admin.end();
        }
        const names = Array.from({ length: 30 }, (_, i) => uniqueName(`queued-${i}`));
        const outs = await Promise.all(
          names.map(async (n) => {
            const t0 = Date.now();
            return { ...(await write(n, 0, 0, 10_000)), ms: Date.now() - t0 };
          }),
        );
        await Promise.all(holds);
        const refused = outs.filter((o) => !o.ok);
        expect(refused.length).toBe(14);
        for (const o of refused) if (!o.ok) expect(notCarriedOut(o.err), String(o.err)).toBe(true);
        for (const [i, o] of outs.entries()) expect(await rows(names[i]!)).toBe(o.ok ? 1 : 0);
        // The refused were answered at once; the admitted waited for the holds (~0.9 s).
        expect(Math.max(...refused.map((o) => o.ms))).toBeLessThan(500);
        expect(Math.min(...outs.filter((o) => o.ok).map((o) => o.ms))).toBeGreaterThan(500);
      },
    );

    it('hands a nested call no more time than its caller has left', async () => {
      const reply = (await bus.request('test.outer', { before: 1_000 }, { timeoutMs: 3_000 })) as { budget: number };
      expect(nestedBudget).toBeGreaterThan(1_000);
      // (timers may fire a millisecond early)
      expect(nestedBudget).toBeLessThanOrEqual(2_050);
      expect(reply.budget).toBeLessThanOrEqual(nestedBudget!);
    });
  });
}
