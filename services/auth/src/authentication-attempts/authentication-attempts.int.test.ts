import {
  type ReportedAuthenticationAttempt,
  type RequestMeta,
  authenticationEventTypes,
  maxAttemptsPerEvent,
  subjects,
} from '@ziti/contracts';
import {
  type Database,
  type EventEnvelope,
  InProcessBus,
  MemoryApiSessionStore,
  OutboxRelay,
  SecretBox,
  createLogger,
  openDatabase,
  queryRows,
  settleProduced,
} from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, waitFor } from '../../../../test/support/infra.ts';
import { authTestBed } from '../../test/authentication/support.ts';
import { createAuthService } from '../app.ts';
import type { AuthenticationAttempt } from './authentication-attempts.ports.ts';
import { BatchedAuthenticationAttempts, outboxAttemptWriter } from './authentication-attempts.store.ts';

/**
 * A burst of authentication attempts on the real Postgres (docs/adr/0021): they land in auth's
 * outbox in few transactions, one `authentication.attempted` per batch, in the order they were
 * reported, each attempt with the meta of the request that reported it; the relay publishes the
 * batches in that order; stop writes the rest, before the relay stops, so this replica publishes it.
 */
const logger = createLogger('test', (process.env.TEST_LOG as never) ?? 'silent');
const def = authenticationEventTypes.authenticationAttempted;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function authDatabase(): Promise<{ database: Database; transactions: () => number; url: string }> {
  const created = await createTestDatabase('attempts');
  cleanups.push(created.drop);
  const opened = await openDatabase({ url: created.url, poolSize: 5 });
  cleanups.push(() => opened.close());
  await authTestBed({ database: opened });
  let transactions = 0;
  const database: Database = {
    ...opened,
    transaction: (fn) => {
      transactions++;
      return opened.transaction(fn);
    },
  };
  return { database, transactions: () => transactions, url: created.url };
}

const metaOf = (i: number): RequestMeta => ({
  requestId: `req-${i}`,
  operation: i % 2 === 0 ? 'client.authenticate' : 'management.authenticate',
  remoteAddress: `127.0.0.${1 + (i % 200)}`,
});
const attemptOf = (i: number): AuthenticationAttempt =>
  i % 3 === 0
    ? { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH', at: new Date() }
    : {
        method: i % 3 === 1 ? 'password' : 'cert',
        outcome: 'succeeded',
        identityId: `identity-${i}`,
        identityName: `name-${i}`,
        authenticatorId: `authenticator-${i}`,
        apiSessionId: `session-${i}`,
        at: new Date(),
      };

interface Row {
  position: string;
  subject: string;
  type: string;
  version: number;
  payload: { attempts: ReportedAuthenticationAttempt[] };
  meta: RequestMeta | null;
  tx: string;
}
const rowsOf = (database: Database) =>
  queryRows<Row>(
    database.db,
    'select position::text, subject, type, version, payload, meta, xmin::text as tx from outbox o order by o.position',
  );
const attemptsIn = (rows: Row[]) => rows.flatMap((r) => r.payload.attempts);

describe('authentication attempts in the outbox', () => {
  it('a burst of 2,000 logins lands as a few events, in the order reported, each attempt with its login’s meta', async () => {
    const { database, transactions } = await authDatabase();
    const reporter = new BatchedAuthenticationAttempts(outboxAttemptWriter(database, undefined), logger);
    cleanups.push(() => reporter.stop());
    const burst = 2_000;
    // Every login is its own request, all in flight at once, reporting as each finishes.
    await Promise.all(
      Array.from({ length: burst }, (_, i) => settleProduced(async () => reporter.report(attemptOf(i)), metaOf(i))),
    );
    // Reporting wrote nothing by itself: the logins did no I/O for it.
    expect(transactions()).toBe(0);
    const rows = await waitFor(async () => {
      const r = await rowsOf(database);
      return attemptsIn(r).length === burst ? r : undefined;
    }, 'every attempt in the outbox');
    // One event per batch (one transaction each): 4 for the burst, a few more if the interval split one.
    expect(rows.length).toBeGreaterThanOrEqual(4);
    expect(rows.length).toBeLessThanOrEqual(8);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(rows.length);
    expect(transactions()).toBe(rows.length);
    expect(rows.map((r) => Number(r.position))).toEqual(rows.map((_, i) => i + 1));
    expect(new Set(rows.map((r) => `${r.subject} ${r.type} v${r.version}`))).toEqual(
      new Set([`${subjects.event('auth', def.type)} ${def.type} v${def.version}`]),
    );
    for (const r of rows) {
      expect(def.schema.parse(r.payload)).toEqual(r.payload);
      expect(r.payload.attempts.length).toBeLessThanOrEqual(maxAttemptsPerEvent);
      // Written outside any request: the event has no meta of its own.
      expect(r.meta).toBeNull();
    }
    // In the order reported, each with the meta of the request that reported it.
    const attempts = attemptsIn(rows);
    expect(attempts.map((a) => a.meta)).toEqual(Array.from({ length: burst }, (_, i) => metaOf(i)));
    attempts.forEach((a, i) => expect(a.identityId).toBe(i % 3 === 0 ? undefined : `identity-${i}`));
  });

  it('the relay publishes the batches in order, the attempts with their meta, the envelopes without', async () => {
    const { database } = await authDatabase();
    const bus = new InProcessBus({ logger });
    const seen: EventEnvelope[] = [];
    const tail = await bus.tail([subjects.event('auth', '>')], (event) => seen.push(event));
    cleanups.push(() => tail.stop());
    const relay = new OutboxRelay(database, bus, 'auth', logger, 50);
    await relay.start();
    cleanups.push(() => relay.stop());
    const reporter = new BatchedAuthenticationAttempts(outboxAttemptWriter(database, relay), logger, {
      batchSize: 50,
    });
    cleanups.push(() => reporter.stop());
    for (let i = 0; i < 300; i++) await settleProduced(async () => reporter.report(attemptOf(i)), metaOf(i));
    const attempts = () => seen.flatMap((e) => (e.data as Row['payload']).attempts);
    await waitFor(() => attempts().length === 300, 'every attempt published');
    expect(seen.length).toBeGreaterThanOrEqual(6);
    expect(seen.length).toBeLessThan(300);
    expect(seen.map((e) => e.sequence)).toEqual(seen.map((_, i) => i + 1));
    expect(new Set(seen.map((e) => `${e.source} ${e.type}`))).toEqual(new Set([`auth ${def.type}`]));
    expect(seen.filter((e) => e.meta !== undefined)).toEqual([]);
    expect(attempts().map((a) => a.meta)).toEqual(Array.from({ length: 300 }, (_, i) => metaOf(i)));
  });

  it('stop writes what is still queued, without waiting for the interval', async () => {
    const { database } = await authDatabase();
    const reporter = new BatchedAuthenticationAttempts(outboxAttemptWriter(database, undefined), logger, {
      intervalMs: 3_600_000,
      batchSize: 40,
    });
    for (let i = 0; i < 100; i++) await settleProduced(async () => reporter.report(attemptOf(i)), metaOf(i));
    // Two full batches were written at once; the 20 left wait for an interval that will not come.
    await waitFor(async () => attemptsIn(await rowsOf(database)).length === 80, 'the full batches');
    await reporter.stop();
    const rows = await rowsOf(database);
    expect(attemptsIn(rows).map((a) => a.meta!.requestId)).toEqual(Array.from({ length: 100 }, (_, i) => `req-${i}`));
    expect(rows.map((r) => r.payload.attempts.length)).toEqual([40, 40, 20]);
  });
});

describe('auth’s stop', () => {
  it('writes the attempts still queued before its relay’s last flush: this replica publishes them', async () => {
    const { database, url } = await authDatabase();
    const bus = new InProcessBus({ logger });
    const seen: EventEnvelope[] = [];
    const tail = await bus.tail([subjects.event('auth', '>')], (event) => seen.push(event));
    cleanups.push(() => tail.stop());
    const service = createAuthService({
      config: {
        sessionTimeoutSeconds: 1_800,
        secretKey: SecretBox.generateSecret(),
        admin: { username: 'admin', password: 'admin-password-at-stop' },
      },
      database,
      bus,
      sessions: new MemoryApiSessionStore(),
      logger,
      ownsBus: false,
      // Nothing is written before the stop but what stop writes.
      attemptQueue: { intervalMs: 3_600_000 },
    });
    await service.start();
    let stopped = false;
    cleanups.push(async () => {
      if (!stopped) await service.stop();
    });
    // A login that fails (no such user): reported, queued, not written.
    const login = bus.request(subjects.operation('auth', 'management', 'authenticate'), {
      requestId: 'req-at-stop',
      api: 'management',
      operationId: 'authenticate',
      params: {},
      query: { method: 'password' },
      body: { username: 'nobody-at-all', password: 'not-a-password' },
      headers: {},
      remoteAddress: '127.0.0.1',
    });
    await expect(login).rejects.toMatchObject({ code: 'INVALID_AUTH' });
    const attempted = () => seen.filter((e) => e.type === def.type);
    expect(attempted()).toEqual([]);
    expect((await rowsOf(database)).filter((r) => r.type === def.type)).toEqual([]);

    stopped = true;
    await service.stop();
    // Published by this replica before it stopped, not left in the outbox for the next relay leader.
    expect(attempted()).toHaveLength(1);
    expect((attempted()[0]!.data as Row['payload']).attempts).toEqual([
      {
        method: 'password',
        outcome: 'failed',
        reason: 'INVALID_AUTH',
        at: expect.any(String),
        meta: expect.objectContaining({
          requestId: 'req-at-stop',
          operation: 'management.authenticate',
          remoteAddress: '127.0.0.1',
        }),
      },
    ]);
    // …and marked published (the service closed its pool: look from outside).
    const after = await openDatabase({ url, poolSize: 1 });
    try {
      const [pending] = await queryRows<{ count: number }>(
        after.db,
        'select count(*)::int as count from outbox where published_at is null',
      );
      expect(pending!.count).toBe(0);
    } finally {
      await after.close();
    }
  });
});
