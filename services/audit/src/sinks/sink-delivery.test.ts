import { type EventDelivery, type EventEnvelope, RetryEvents } from '@ziti/platform/bus/bus';
import { describe, expect, it } from 'vitest';
import { OrderedSink, type OrderedSinkOptions, SeededCheckpoint } from './sink-delivery.domain.ts';
import type { Framed } from './sinks.domain.ts';
import type { DeliveryOutcome, SinkCheckpoint, SinkItem, SinkLease, SinkObserver, SinkOutput } from './sinks.ports.ts';

/** An output that keeps what it was given, failing the deliveries `failNext` says. */
class MemoryOutput implements SinkOutput {
  readonly delivered: string[] = [];
  attempts = 0;
  /** Each call takes one entry: how many items go through before a failure (undefined: all). */
  plan: (number | undefined)[] = [];
  async deliver(items: readonly SinkItem[]): Promise<DeliveryOutcome> {
    this.attempts++;
    const through = this.plan.length > 0 ? this.plan.shift() : undefined;
    const n = through === undefined ? items.length : Math.min(through, items.length);
    this.delivered.push(...items.slice(0, n).map((i) => i.id));
    return n < items.length
      ? { delivered: n, failure: { reason: 'http_5xx', status: 500, message: 'HTTP 500' } }
      : { delivered: n };
  }
}

class MemoryCheckpoint implements SinkCheckpoint {
  failSaves = 0;
  constructor(public position?: number) {}
  async load() {
    return this.position;
  }
  async save(position: number) {
    if (this.failSaves > 0) {
      this.failSaves--;
      throw new Error('disk full');
    }
    this.position = position;
  }
}

function recorder() {
  const seen: string[] = [];
  const observer: SinkObserver = {
    started: (p) => seen.push(`started ${p}`),
    delivered: (n, p) => seen.push(`delivered ${n} up to ${p}`),
    failed: (f, n) => seen.push(`failed ${f.reason} #${n}`),
    recovered: (n) => seen.push(`recovered after ${n}`),
    skipped: (reason, from, to) => seen.push(`skipped ${reason} ${from}..${to}`),
    checkpointFailed: () => seen.push('checkpoint failed'),
  };
  return { seen, observer };
}

/** Odd positions are changes (delivered), even ones are passed over (e.g. authentication left out). */
const frame = (event: EventEnvelope): Framed =>
  event.sequence % 2 === 1
    ? { kind: 'deliver', item: { id: event.id, position: event.sequence, body: `{"feedId":"${event.id}"}` } }
    : { kind: 'pass' };
const allDelivered = (event: EventEnvelope): Framed => ({
  kind: 'deliver',
  item: { id: event.id, position: event.sequence, body: '{}' },
});

const batch = (...positions: number[]): EventDelivery[] =>
  positions.map((n) => ({
    event: {
      id: `audit:${n}`,
      type: 'auditRecord.created',
      version: 1,
      source: 'audit',
      sequence: n,
      occurredAt: '',
      data: {},
    },
    attempt: 1,
  }));

async function retried(run: Promise<void>): Promise<string[]> {
  try {
    await run;
  } catch (err) {
    if (err instanceof RetryEvents) return [...err.eventIds].sort();
    throw err;
  }
  return [];
}

async function sinkWith(options: Partial<OrderedSinkOptions> & { checkpoint?: MemoryCheckpoint } = {}) {
  const output = new MemoryOutput();
  const checkpoint = options.checkpoint ?? new MemoryCheckpoint();
  const { seen, observer } = recorder();
  const sink = new OrderedSink({
    output,
    checkpoint,
    observer,
    frame: allDelivered,
    backoff: { minMs: 10, maxMs: 40 },
    random: () => 1,
    ...options,
  });
  await sink.start();
  return { sink, output, checkpoint, seen };
}

describe('OrderedSink', () => {
  it('delivers in position order, passes over what is not its, and saves its position', async () => {
    const { sink, output, checkpoint } = await sinkWith({ frame, checkpoint: new MemoryCheckpoint(0) });
    expect(await retried(sink.handle(batch(3, 1, 2, 4)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:3']);
    expect(checkpoint.position).toBe(4);
    expect(sink.position).toBe(4);
  });

  it('acknowledges redeliveries without delivering them again', async () => {
    const { sink, output } = await sinkWith({ checkpoint: new MemoryCheckpoint(0) });
    await sink.handle(batch(1, 2, 3));
    expect(await retried(sink.handle(batch(2, 3, 3, 4)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:2', 'audit:3', 'audit:4']);
  });

  it('hands back an event until the one before it came by', async () => {
    const { sink, output } = await sinkWith({ checkpoint: new MemoryCheckpoint(1) });
    expect(await retried(sink.handle(batch(3, 4)))).toEqual(['audit:3', 'audit:4']);
    expect(output.attempts).toBe(0);
    await sink.handle(batch(2));
    await sink.handle(batch(3, 4));
    expect(output.delivered).toEqual(['audit:2', 'audit:3', 'audit:4']);
  });

  it('stops at a failure: acknowledges what went through, hands back the failing event and the rest', async () => {
    const { sink, output, checkpoint, seen } = await sinkWith({
      checkpoint: new MemoryCheckpoint(0),
      maxWaitInBatchMs: 0, // no waiting in hand: the first failure ends the batch
    });
    output.plan = [1];
    expect(await retried(sink.handle(batch(1, 2, 3)))).toEqual(['audit:2', 'audit:3']);
    expect(checkpoint.position).toBe(1);
    expect(sink.failing).toBe(true);
    // Redelivered before the back-off is over: handed back without an attempt.
    const attempts = output.attempts;
    expect(await retried(sink.handle(batch(2, 3)))).toEqual(['audit:2', 'audit:3']);
    expect(output.attempts).toBe(attempts);
    await new Promise((r) => setTimeout(r, 25));
    expect(await retried(sink.handle(batch(2, 3)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:2', 'audit:3']);
    expect(seen).toContain('failed http_5xx #1');
    expect(seen).toContain('recovered after 1');
    expect(sink.failing).toBe(false);
  });

  it('asks for what it hands back at the end of its back-off, all together, and soon otherwise', async () => {
    let now = 1_000_000;
    const { sink, output } = await sinkWith({
      checkpoint: new MemoryCheckpoint(0),
      maxWaitInBatchMs: 0,
      backoff: { minMs: 4_000, maxMs: 10_000 },
      now: () => now,
    });
    const handedBack = async (run: Promise<void>) => {
      const err = await run.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RetryEvents);
      return err as RetryEvents;
    };
    output.plan = [0];
    // The first failure: back-off 4 s (random 1: no jitter off it), from now.
    expect((await handedBack(sink.handle(batch(1, 2)))).delayMs).toBe(4_000);
    // Events handed back later, while the back-off runs, come again when it ends, with the others.
    now += 1_500;
    expect((await handedBack(sink.handle(batch(3)))).delayMs).toBe(2_500);
    now += 2_400;
    expect((await handedBack(sink.handle(batch(1, 2, 3)))).delayMs).toBe(250);
    // Not backing off: an event above a missing one is asked for again soon.
    now += 100;
    expect(await retried(sink.handle(batch(1, 2, 3)))).toEqual([]);
    expect((await handedBack(sink.handle(batch(5)))).delayMs).toBe(250);
  });

  it('retries in hand when the back-off is short, growing it each time', async () => {
    const { sink, output, seen } = await sinkWith({ checkpoint: new MemoryCheckpoint(0) });
    output.plan = [0, 0, 0];
    expect(await retried(sink.handle(batch(1, 2)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:2']);
    expect(seen.filter((s) => s.startsWith('failed'))).toEqual([
      'failed http_5xx #1',
      'failed http_5xx #2',
      'failed http_5xx #3',
    ]);
  });

  it('keeps the position of events passed over before a failure', async () => {
    const { sink, output, checkpoint } = await sinkWith({
      frame,
      checkpoint: new MemoryCheckpoint(0),
      maxWaitInBatchMs: 0,
    });
    output.plan = [1];
    // 1 delivered, 2 passed over, 3 fails: the position is 2.
    expect(await retried(sink.handle(batch(1, 2, 3, 4)))).toEqual(['audit:3', 'audit:4']);
    expect(checkpoint.position).toBe(2);
  });

  it('starts with the first event it is given when it has no checkpoint', async () => {
    const { sink, output, checkpoint } = await sinkWith();
    await sink.handle(batch(41, 42));
    expect(output.delivered).toEqual(['audit:41', 'audit:42']);
    expect(checkpoint.position).toBe(42);
  });

  it('passes over a position that never comes, after the gap timeout, from the lowest event waiting', async () => {
    let clock = 0;
    const { sink, output, seen } = await sinkWith({
      checkpoint: new MemoryCheckpoint(2),
      gapTimeoutMs: 1_000,
      now: () => clock,
    });
    expect(await retried(sink.handle(batch(6, 7)))).toEqual(['audit:6', 'audit:7']);
    clock = 500;
    expect(await retried(sink.handle(batch(5)))).toEqual(['audit:5']);
    clock = 1_200;
    // The gap is old enough, but 6 is not the lowest event waiting (5 is): still handed back.
    expect(await retried(sink.handle(batch(6, 7)))).toEqual(['audit:6', 'audit:7']);
    expect(output.attempts).toBe(0);
    expect(await retried(sink.handle(batch(5, 6, 7)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:5', 'audit:6', 'audit:7']);
    expect(seen).toContain('skipped gap 3..4');
  });

  it('passes over from a later event when the lowest one stopped coming round', async () => {
    let clock = 0;
    const { sink, output } = await sinkWith({
      checkpoint: new MemoryCheckpoint(2),
      gapTimeoutMs: 1_000,
      now: () => clock,
    });
    expect(await retried(sink.handle(batch(5)))).toEqual(['audit:5']);
    clock = 2_500; // 5 went to another replica, or expired: 6 is the lowest now
    expect(await retried(sink.handle(batch(6)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:6']);
  });

  it('hands the batch back when its checkpoint cannot be saved, and does not deliver it twice', async () => {
    const checkpoint = new MemoryCheckpoint(0);
    const { sink, output, seen } = await sinkWith({ checkpoint });
    checkpoint.failSaves = 1;
    expect(await retried(sink.handle(batch(1, 2)))).toEqual(['audit:1', 'audit:2']);
    expect(seen).toContain('checkpoint failed');
    expect(await retried(sink.handle(batch(1, 2)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:2']);
    expect(checkpoint.position).toBe(2);
  });

  it('with a shared checkpoint, goes by what other replicas delivered', async () => {
    const shared = Object.assign(new MemoryCheckpoint(0), { shared: true });
    const a = await sinkWith({ checkpoint: shared });
    const b = await sinkWith({ checkpoint: shared });
    await a.sink.handle(batch(1, 2, 3));
    // 2 and 3 come to replica B again (their acknowledgements were lost): B passes them.
    expect(await retried(b.sink.handle(batch(2, 3, 4)))).toEqual([]);
    expect(a.output.delivered).toEqual(['audit:1', 'audit:2', 'audit:3']);
    expect(b.output.delivered).toEqual(['audit:4']);
    expect(shared.position).toBe(4);
  });

  it('on stop, abandons a wait in hand and hands the batch back', async () => {
    const { sink, output } = await sinkWith({
      checkpoint: new MemoryCheckpoint(0),
      backoff: { minMs: 10_000, maxMs: 10_000 },
      maxWaitInBatchMs: 60_000,
    });
    output.plan = [0];
    const running = retried(sink.handle(batch(1)));
    await new Promise((r) => setTimeout(r, 20));
    const began = Date.now();
    await sink.stop();
    expect(await running).toEqual(['audit:1']);
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(await retried(sink.handle(batch(1)))).toEqual(['audit:1']);
  });

  it('under a lease, delivers one event at a time, each only while the lease is held', async () => {
    let checks = 0;
    const { sink, output, checkpoint } = await sinkWith({
      checkpoint: Object.assign(new MemoryCheckpoint(0), { shared: true }),
      leased: async () => {
        checks++;
        return true;
      },
    });
    expect(await retried(sink.handle(batch(1, 2, 3)))).toEqual([]);
    expect(output.delivered).toEqual(['audit:1', 'audit:2', 'audit:3']);
    expect(output.attempts).toBe(3);
    expect(checks).toBe(3);
    expect(checkpoint.position).toBe(3);
  });

  it('stops delivering once the lease is lost, saves what went through and hands back the rest', async () => {
    let checks = 0;
    const { sink, output, checkpoint } = await sinkWith({
      checkpoint: Object.assign(new MemoryCheckpoint(0), { shared: true }),
      // The database connection breaks after two events (a failed check counts as lost too).
      leased: async () => {
        if (++checks > 3) throw new Error('connection terminated');
        return checks <= 2;
      },
    });
    expect(await retried(sink.handle(batch(1, 2, 3, 4)))).toEqual(['audit:3', 'audit:4']);
    expect(output.delivered).toEqual(['audit:1', 'audit:2']);
    expect(checkpoint.position).toBe(2);
    expect(await retried(sink.handle(batch(3, 4)))).toEqual(['audit:3', 'audit:4']);
    expect(output.delivered).toEqual(['audit:1', 'audit:2']);
  });

  it('a seeded checkpoint starts from the seed until the shared one has a position', async () => {
    const kept = Object.assign(new MemoryCheckpoint(), { shared: true });
    const seed = new MemoryCheckpoint(7);
    const checkpoint = new SeededCheckpoint(kept, seed);
    expect(checkpoint.shared).toBe(true);
    expect(checkpoint.lease).toBeUndefined();
    expect(await checkpoint.load()).toBe(7);
    await checkpoint.save(9);
    expect(kept.position).toBe(9);
    expect(seed.position).toBe(7);
    expect(await checkpoint.load()).toBe(9);
    // The shared checkpoint's lease and close are its own.
    let closed = false;
    const lease: SinkLease = { held: async () => true, release: async () => undefined };
    const leased = new SeededCheckpoint(
      Object.assign(new MemoryCheckpoint(), {
        lease: async () => lease,
        close: async () => {
          closed = true;
        },
      }),
      seed,
    );
    expect(await leased.lease!(0, new AbortController().signal)).toBe(lease);
    await leased.close!();
    expect(closed).toBe(true);
  });
});
