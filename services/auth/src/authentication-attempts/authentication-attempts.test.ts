import { type RequestMeta, authenticationEventTypes, maxAttemptsPerEvent } from '@ziti/contracts';
import {
  DependencyUnavailableError,
  type OutboxRelay,
  metricsRegistry,
  openDatabase,
  queryRows,
  settleProduced,
} from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/infra.ts';
import { authTestBed } from '../../test/authentication/support.ts';
import type { AuthenticationAttempt } from './authentication-attempts.ports.ts';
import {
  type AttemptQueueOptions,
  BatchedAuthenticationAttempts,
  type QueuedAttempt,
  attemptEvents,
  outboxAttemptWriter,
} from './authentication-attempts.store.ts';

/**
 * The reporter of authentication attempts (docs/adr/0021): batches off the login's path, bounded,
 * flushed on stop. The batching is driven through a writer of the test's own (it records or holds
 * the batches); the outbox writer itself runs on PGlite with auth's migrations.
 */

const at = new Date('2026-11-27T10:00:00.000Z');
const attempt = (i: number, extra: Partial<AuthenticationAttempt> = {}): AuthenticationAttempt => ({
  method: 'password',
  outcome: 'failed',
  reason: 'INVALID_AUTH',
  identityId: `identity-${i}`,
  at,
  ...extra,
});
const meta = (i: number): RequestMeta => ({
  requestId: `request-${i}`,
  operation: 'client.authenticate',
  remoteAddress: '127.0.0.1',
});
/** Reports attempt `i` from inside request `i`, as the login's operation handler would. */
const reportIn = async (r: BatchedAuthenticationAttempts, i: number, extra?: Partial<AuthenticationAttempt>) => {
  await settleProduced(async () => r.report(attempt(i, extra)), meta(i));
};

interface Logged {
  level: 'warn' | 'error';
  fields: Record<string, unknown>;
  message: string;
}

/** A writer that records each batch; `hold()` makes the next writes wait until released. */
function recordingWriter() {
  const batches: QueuedAttempt[][] = [];
  let gate: Promise<void> | undefined;
  let open: (() => void) | undefined;
  let fail: ((batch: QueuedAttempt[]) => unknown) | undefined;
  let calls = 0;
  const write = async (batch: QueuedAttempt[]) => {
    calls++;
    if (gate) await gate;
    const err = fail?.(batch);
    if (err) throw err;
    batches.push(batch);
  };
  return {
    write,
    batches,
    calls: () => calls,
    ids: () => batches.map((b) => b.map((a) => a.state.identityId)),
    hold() {
      gate = new Promise((resolve) => (open = resolve));
    },
    release() {
      gate = undefined;
      open?.();
    },
    failWith(f: ((batch: QueuedAttempt[]) => unknown) | undefined) {
      fail = f;
    },
  };
}

const started: BatchedAuthenticationAttempts[] = [];
function reporter(writer: ReturnType<typeof recordingWriter>, options: AttemptQueueOptions = {}) {
  const logged: Logged[] = [];
  const log = (level: Logged['level']) => (fields: Record<string, unknown>, message: string) =>
    logged.push({ level, fields, message });
  const r = new BatchedAuthenticationAttempts(writer.write, { warn: log('warn'), error: log('error') } as never, {
    intervalMs: 20,
    ...options,
  });
  started.push(r);
  return { r, logged };
}
afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

async function metric(name: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric(name);
  return m ? ((await m.get()).values[0]?.value ?? 0) : 0;
}

describe('batching', () => {
  it('writes what was reported within one interval as one batch, in order, each with its request meta', async () => {
    const w = recordingWriter();
    const { r } = reporter(w, { intervalMs: 50 });
    for (let i = 1; i <= 5; i++) await reportIn(r, i);
    // Reported: nothing written on the way (the login's path does no I/O).
    expect(w.calls()).toBe(0);
    expect(r.pending).toBe(5);
    await waitFor(() => w.batches.length === 1, 'the batch');
    expect(w.ids()).toEqual([['identity-1', 'identity-2', 'identity-3', 'identity-4', 'identity-5']]);
    expect(w.batches[0]!.map((a) => a.meta)).toEqual([1, 2, 3, 4, 5].map(meta));
    expect(w.batches[0]![0]!.state).toEqual({
      method: 'password',
      outcome: 'failed',
      reason: 'INVALID_AUTH',
      identityId: 'identity-1',
      at: '2026-11-27T10:00:00.000Z',
    });
    expect(r.pending).toBe(0);
  });

  it('a full batch is written at once; one batch at a time, later reports in the next, order kept', async () => {
    const w = recordingWriter();
    const { r } = reporter(w, { intervalMs: 60_000, batchSize: 3 });
    w.hold();
    for (let i = 1; i <= 3; i++) await reportIn(r, i);
    await waitFor(() => w.calls() === 1, 'the full batch written without waiting for the interval');
    // While it is written, more come: they wait for it, the full ones go next, the rest at the interval or stop.
    for (let i = 4; i <= 10; i++) await reportIn(r, i);
    expect(w.calls()).toBe(1);
    w.release();
    await waitFor(() => w.batches.length === 3, 'the next full batches');
    expect(w.ids()).toEqual([
      ['identity-1', 'identity-2', 'identity-3'],
      ['identity-4', 'identity-5', 'identity-6'],
      ['identity-7', 'identity-8', 'identity-9'],
    ]);
    expect(r.pending).toBe(1);
    await r.stop();
    expect(w.ids().at(-1)).toEqual(['identity-10']);
  });

  it('an attempt reported outside a request has no meta; the write runs outside the reporting request', async () => {
    const w = recordingWriter();
    const { r } = reporter(w);
    r.report(attempt(1));
    await r.stop();
    expect(w.batches[0]![0]).not.toHaveProperty('meta');
  });

  it('never stores what the attempt does not name: no identity fields for an unknown username, no extra keys', async () => {
    const w = recordingWriter();
    const { r } = reporter(w);
    const unknown = { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH', at } as AuthenticationAttempt;
    r.report({ ...unknown, password: 'hunter2', username: 'typo-of-a-password' } as AuthenticationAttempt);
    await r.stop();
    expect(w.batches[0]![0]!.state).toEqual({
      method: 'password',
      outcome: 'failed',
      reason: 'INVALID_AUTH',
      at: at.toISOString(),
    });
  });
});

describe('the bound', () => {
  it('when the queue is full a report is dropped at once, counted and logged; the login never waits', async () => {
    const w = recordingWriter();
    const { r, logged } = reporter(w, { batchSize: 4, capacity: 8, intervalMs: 5 });
    const droppedBefore = await metric('ziti_auth_attempts_dropped_total');
    w.hold(); // the database does not keep up
    for (let i = 1; i <= 4; i++) await reportIn(r, i);
    await waitFor(() => w.calls() === 1, 'a write under way');
    const started = performance.now();
    for (let i = 5; i <= 20; i++) await reportIn(r, i);
    expect(performance.now() - started).toBeLessThan(250);
    // 4 being written + 4 waiting = the capacity; the other 12 are dropped.
    expect(r.pending).toBe(8);
    expect((await metric('ziti_auth_attempts_dropped_total')) - droppedBefore).toBe(12);
    expect(logged.filter((l) => l.level === 'warn' && /queue is full/.test(l.message))).toHaveLength(1);
    expect(logged[0]!.fields).toMatchObject({ dropped: 1, capacity: 8 });
    w.release();
    await waitFor(() => r.pending === 0, 'the queue drained');
    expect(w.ids().flat()).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((i) => `identity-${i}`));
    // Room again: reports are kept.
    await reportIn(r, 21);
    expect(r.pending).toBe(1);
  });
});

describe('failures', () => {
  it('while the database is unreachable the batch waits, whole and in order, and is written when it is back', async () => {
    const w = recordingWriter();
    const { r, logged } = reporter(w, { retryMs: 30 });
    w.failWith(() => new DependencyUnavailableError('database', new Error('connect ECONNREFUSED')));
    for (let i = 1; i <= 3; i++) await reportIn(r, i);
    await waitFor(() => w.calls() >= 2, 'a retry');
    expect(r.pending).toBe(3);
    expect(logged.filter((l) => /wait for the database/.test(l.message))).toHaveLength(1);
    await reportIn(r, 4);
    w.failWith(undefined);
    await waitFor(() => r.pending === 0, 'the written queue');
    expect(w.ids().flat()).toEqual(['identity-1', 'identity-2', 'identity-3', 'identity-4']);
  });

  it('a batch that fails otherwise is written one by one: only the attempt that fails alone is dropped', async () => {
    const w = recordingWriter();
    const { r, logged } = reporter(w);
    w.failWith((batch) => (batch.some((a) => a.state.identityId === 'identity-2') ? new Error('bad row') : undefined));
    for (let i = 1; i <= 4; i++) await reportIn(r, i);
    await waitFor(() => r.pending === 0, 'the queue done with');
    expect(w.ids()).toEqual([['identity-1'], ['identity-3'], ['identity-4']]);
    expect(logged.find((l) => l.level === 'error')!.fields).toMatchObject({
      method: 'password',
      requestId: 'request-2',
    });
  });
});

describe('stop', () => {
  it('writes everything queued, in batches, without waiting for the interval; later reports are dropped', async () => {
    const w = recordingWriter();
    const { r, logged } = reporter(w, { intervalMs: 60_000, batchSize: 500 });
    for (let i = 1; i <= 1_234; i++) await reportIn(r, i);
    // Two full batches are written at once; the rest waits for the (long) interval.
    await waitFor(() => w.batches.length === 2, 'the full batches');
    expect(r.pending).toBe(234);
    const stopping = performance.now();
    await r.stop();
    expect(performance.now() - stopping).toBeLessThan(1_000);
    expect(w.batches.map((b) => b.length)).toEqual([500, 500, 234]);
    expect(w.ids().flat()).toEqual(Array.from({ length: 1_234 }, (_, i) => `identity-${i + 1}`));
    r.report(attempt(9_999));
    expect(r.pending).toBe(0);
    expect(logged.some((l) => /auth is stopping/.test(l.message))).toBe(true);
  });

  it('waits for the write under way first', async () => {
    const w = recordingWriter();
    const { r } = reporter(w, { batchSize: 2 });
    w.hold();
    for (let i = 1; i <= 3; i++) await reportIn(r, i);
    await waitFor(() => w.calls() === 1, 'a write under way');
    const stopped = r.stop();
    w.release();
    await stopped;
    expect(w.ids()).toEqual([['identity-1', 'identity-2'], ['identity-3']]);
  });

  it('with the database gone, says how many it could not write', async () => {
    const w = recordingWriter();
    const { r, logged } = reporter(w, { intervalMs: 60_000 });
    w.failWith(() => new DependencyUnavailableError('database', new Error('gone')));
    for (let i = 1; i <= 3; i++) await reportIn(r, i);
    await r.stop();
    expect(logged.find((l) => l.level === 'error')).toMatchObject({
      fields: { lost: 3 },
      message: 'authentication attempts not written at stop',
    });
    expect(r.pending).toBe(0);
  });
});

describe('the outbox writer', () => {
  const def = authenticationEventTypes.authenticationAttempted;
  const queued = (i: number, withMeta = true): QueuedAttempt => ({
    state: { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH', at: at.toISOString() },
    ...(withMeta ? { meta: meta(i) } : {}),
  });
  const attemptsOf = (data: unknown) => (data as { attempts: { meta?: RequestMeta; identityId?: string }[] }).attempts;

  it("writes a batch to auth's outbox as one event, one transaction: each attempt with its meta, none on the event", async () => {
    const bed = await authTestBed({ database: await openDatabase({ pgliteMemory: true }) });
    try {
      let kicks = 0;
      const write = outboxAttemptWriter(bed.database, { kick: () => kicks++ } as unknown as OutboxRelay);
      const batch: QueuedAttempt[] = [1, 2, 3].map((i) => queued(i, i !== 2));
      await write(batch);
      const rows = await queryRows<{
        position: string;
        subject: string;
        type: string;
        version: number;
        payload: unknown;
        meta: unknown;
      }>(bed.database.db, 'select position, subject, type, version, payload, meta from outbox order by position');
      expect(rows.map((row) => [row.subject, row.type, row.version])).toEqual([
        ['ziti.evt.auth.authentication.attempted', def.type, def.version],
      ]);
      // Writing the batch is background work: the event has no request of its own; each attempt has its own.
      expect(rows[0]!.meta).toBeNull();
      expect(rows[0]!.payload).toEqual({
        attempts: [
          { ...batch[0]!.state, meta: meta(1) },
          { ...batch[1]!.state },
          { ...batch[2]!.state, meta: meta(3) },
        ],
      });
      expect(def.schema.parse(rows[0]!.payload)).toEqual(rows[0]!.payload);
      expect(kicks).toBe(1);
    } finally {
      await bed.close();
    }
  });

  it('an event never carries more than its contract allows: split by count, and by weight, order kept', () => {
    const many = Array.from({ length: maxAttemptsPerEvent * 2 + 1 }, (_, i) => queued(i));
    const byCount = attemptEvents(many);
    expect(byCount.map((e) => attemptsOf(e.data).length)).toEqual([maxAttemptsPerEvent, maxAttemptsPerEvent, 1]);
    expect(byCount.flatMap((e) => attemptsOf(e.data).map((a) => a.meta))).toEqual(many.map((a) => a.meta));
    for (const e of byCount) {
      expect(def.schema.safeParse(e.data).success).toBe(true);
      expect(e).not.toHaveProperty('meta');
    }
    // Attempts of ~2 KB each (long names): every event stays within 256 KB.
    const heavy: QueuedAttempt[] = Array.from({ length: 300 }, (_, i) => ({
      state: { ...queued(i).state, identityId: `identity-${i}`, identityName: 'n'.repeat(2_000) },
      meta: meta(i),
    }));
    const byWeight = attemptEvents(heavy);
    expect(byWeight.length).toBeGreaterThan(1);
    for (const e of byWeight) expect(Buffer.byteLength(JSON.stringify(e.data))).toBeLessThanOrEqual(256 * 1024);
    expect(byWeight.flatMap((e) => attemptsOf(e.data).map((a) => a.identityId))).toEqual(
      heavy.map((a) => a.state.identityId),
    );
  });

  it('a batch is never longer than an event may be, whatever batchSize says', async () => {
    const w = recordingWriter();
    const { r } = reporter(w, { intervalMs: 60_000, batchSize: 10_000 });
    for (let i = 1; i <= maxAttemptsPerEvent + 1; i++) await reportIn(r, i);
    await waitFor(() => w.batches.length === 1, 'the full batch');
    expect(w.batches[0]).toHaveLength(maxAttemptsPerEvent);
    await r.stop();
    expect(w.batches.map((b) => b.length)).toEqual([maxAttemptsPerEvent, 1]);
  });
});
