import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/infra.ts';
import {
  type EventDelivery,
  type EventEnvelope,
  InProcessBus,
  type InProcessBusOptions,
  RetryEvents,
  createLogger,
} from '../src/index.ts';

/**
 * The durable consumers of the in-process bus (`npm start`): each has its own ordered queue and its
 * own redelivery, so one that fails or is slow holds back nothing but itself (DurableQueue in
 * src/bus/in-process-bus.ts).
 */

const subject = (n: number) => `ziti.evt.audit.thing.${n % 2 === 0 ? 'even' : 'odd'}`;

function event(n: number): EventEnvelope {
  return {
    id: `audit:${n}`,
    type: 'thing.created',
    version: 1,
    source: 'audit',
    sequence: n,
    occurredAt: new Date(0).toISOString(),
    data: { n },
  };
}

const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `audit:${from + i}`);

function captureLogs() {
  const lines: string[] = [];
  const logger = createLogger('bus', 'info', { write: (line: string) => void lines.push(line) });
  return { lines, logger };
}

/**
 * A consumer that records what it was given and handles it in order: at the first event `fail`
 * refuses, it hands back that one and everything after it in the batch (as an event sink does).
 */
function recorder(fail: (d: EventDelivery) => boolean = () => false) {
  const seen: { id: string; attempt: number }[] = [];
  const handled: string[] = [];
  const handler = async (batch: EventDelivery[]) => {
    seen.push(...batch.map((d) => ({ id: d.event.id, attempt: d.attempt })));
    const failing = batch.findIndex(fail);
    const through = failing < 0 ? batch : batch.slice(0, failing);
    handled.push(...through.map((d) => d.event.id));
    if (failing >= 0) throw new RetryEvents(new Set(batch.slice(failing).map((d) => d.event.id)));
  };
  return { seen, handled, handler };
}

const buses: InProcessBus[] = [];
function makeBus(options: InProcessBusOptions = {}): InProcessBus {
  const bus = new InProcessBus({
    logger: createLogger('bus', 'silent'),
    redeliveryDelayMs: () => 20,
    ...options,
  });
  buses.push(bus);
  return bus;
}
afterEach(async () => {
  for (const bus of buses.splice(0)) await bus.close();
});

describe('in-process durable consumers', () => {
  it('a consumer failing for N attempts delays neither another consumer, nor a follower, nor a tail', async () => {
    const bus = makeBus({ redeliveryDelayMs: () => 200 });
    const attemptsToFail = 8;
    const failing = recorder((d) => d.event.id === 'audit:1' && d.attempt <= attemptsToFail);
    const healthy = recorder();
    const failingConsumer = await bus.consume({
      durable: 'failing',
      subject: 'ziti.evt.audit.>',
      handler: failing.handler,
    });
    await bus.consume({ durable: 'healthy', subject: 'ziti.evt.audit.>', handler: healthy.handler });
    const followed: string[] = [];
    await bus.follow(
      ['ziti.evt.audit.>'],
      {},
      (e) => followed.push(e.id),
      () => undefined,
    );
    const tailed: string[] = [];
    await bus.tail(['ziti.evt.audit.>'], (e) => tailed.push(e.id));

    const began = Date.now();
    for (let n = 1; n <= 30; n++) {
      await bus.publish(subject(n), event(n));
      // Handled by the healthy consumer, seen by the follower and the tail, when publish resolves.
      expect(healthy.handled.at(-1)).toBe(`audit:${n}`);
      expect(followed.at(-1)).toBe(`audit:${n}`);
      expect(tailed.at(-1)).toBe(`audit:${n}`);
    }
    // Eight failures 200 ms apart take 1.6 s: the publishes did not wait for them.
    expect(Date.now() - began).toBeLessThan(1_000);
    expect(failing.handled).toEqual([]);
    // Its queue holds everything from the event it fails on (its lag, for metrics).
    expect(await failingConsumer.pending!()).toBeGreaterThanOrEqual(29);

    await waitFor(() => failing.handled.length === 30, 'the failing consumer to catch up');
    expect(failing.handled).toEqual(ids(1, 30));
    expect(failing.seen.filter((s) => s.id === 'audit:1').map((s) => s.attempt)).toEqual(
      Array.from({ length: attemptsToFail + 1 }, (_, i) => i + 1),
    );
    expect(healthy.seen).toEqual(ids(1, 30).map((id) => ({ id, attempt: 1 })));
    expect(followed).toEqual(ids(1, 30));
    expect(tailed).toEqual(ids(1, 30));
  });

  it('keeps the order of each consumer across redeliveries, a failed event before anything after it', async () => {
    const bus = makeBus({ publishWaitMs: 20 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const seen: { id: string; attempt: number }[] = [];
    const handled: string[] = [];
    await bus.consume({
      durable: 'ordered',
      subject: 'ziti.evt.audit.>',
      handler: async (batch) => {
        seen.push(...batch.map((d) => ({ id: d.event.id, attempt: d.attempt })));
        // The first delivery is held, so what is published meanwhile comes as one batch.
        if (batch[0]!.event.id === 'audit:1') await gate;
        // Position 4 fails twice, 7 once; the rest of their batch is acknowledged.
        const retry = new Set(
          batch
            .filter(
              (d) => (d.event.id === 'audit:4' && d.attempt <= 2) || (d.event.id === 'audit:7' && d.attempt === 1),
            )
            .map((d) => d.event.id),
        );
        handled.push(...batch.filter((d) => !retry.has(d.event.id)).map((d) => d.event.id));
        if (retry.size > 0) throw new RetryEvents(retry);
      },
    });
    for (let n = 1; n <= 8; n++) await bus.publish(subject(n), event(n));
    release();
    await waitFor(() => handled.length === 8, 'every event handled');
    for (let n = 9; n <= 10; n++) await bus.publish(subject(n), event(n));
    await waitFor(() => handled.length === 10, 'the later events');
    // 2..8 came as one batch; 4 and 7 came again, before 9 and 10, in their order.
    expect(seen.map((s) => `${s.id.split(':')[1]}#${s.attempt}`)).toEqual([
      '1#1',
      ...['2#1', '3#1', '4#1', '5#1', '6#1', '7#1', '8#1'],
      ...['4#2', '7#2'],
      '4#3',
      '9#1',
      '10#1',
    ]);
    expect(handled).toEqual([
      'audit:1',
      'audit:2',
      'audit:3',
      'audit:5',
      'audit:6',
      'audit:8',
      'audit:7',
      'audit:4',
      'audit:9',
      'audit:10',
    ]);
  });

  it('stores each event once: a republished id reaches no consumer, follower or tail again', async () => {
    const bus = makeBus();
    const failing = recorder((d) => d.attempt <= 3);
    await bus.consume({ durable: 'failing', subject: 'ziti.evt.audit.>', handler: failing.handler });
    const tailed: string[] = [];
    await bus.tail(['ziti.evt.audit.>'], (e) => tailed.push(e.id));
    const followed: number[] = [];
    await bus.follow(
      ['ziti.evt.audit.>'],
      {},
      (_e, sequence) => followed.push(sequence),
      () => undefined,
    );
    // The outbox relay publishes again what it could not mark published (a crash in between).
    for (const n of [1, 2, 1, 2, 3, 3]) await bus.publish(subject(n), event(n));
    await waitFor(() => failing.handled.length === 3, 'the consumer');
    expect(failing.handled).toEqual(ids(1, 3));
    expect(tailed).toEqual(ids(1, 3));
    expect(followed).toHaveLength(3);
    expect(new Set(followed).size).toBe(3);
    expect(failing.seen.filter((s) => s.attempt === 1).map((s) => s.id)).toEqual(ids(1, 3));
  });

  it('publishMany hands each consumer the events together, in order, once each, and resolves once they are handled', async () => {
    const bus = makeBus();
    const batches: string[][] = [];
    const all = recorder();
    await bus.consume({
      durable: 'all',
      subject: 'ziti.evt.audit.>',
      handler: async (batch) => {
        batches.push(batch.map((d) => d.event.id));
        await all.handler(batch);
      },
    });
    const evens = recorder();
    await bus.consume({ durable: 'evens', subject: 'ziti.evt.audit.thing.even', handler: evens.handler });
    const tailed: string[] = [];
    await bus.tail(['ziti.evt.audit.>'], (e) => tailed.push(e.id));
    // An outbox batch (one of them stored already, as after a crash between publish and mark).
    await bus.publish(subject(1), event(1));
    batches.length = 0;
    await bus.publishMany([1, 2, 3, 4, 5].map((n) => ({ subject: subject(n), event: event(n) })));
    // Resolved once the consumers that kept up handled them all.
    expect(all.handled).toEqual(ids(1, 5));
    expect(batches).toEqual([ids(2, 5)]);
    expect(evens.handled).toEqual(['audit:2', 'audit:4']);
    expect(tailed).toEqual(ids(1, 5));
  });

  it('does not wait for a slow consumer past the publish wait, and not at all while it is slow', async () => {
    const bus = makeBus({ publishWaitMs: 100 });
    const slowSeen: string[] = [];
    let slowMs = 1_000;
    await bus.consume({
      durable: 'slow',
      subject: 'ziti.evt.audit.>',
      handler: async (batch) => {
        await new Promise((r) => setTimeout(r, slowMs));
        slowSeen.push(...batch.map((d) => d.event.id));
      },
    });
    const fast = recorder();
    await bus.consume({ durable: 'fast', subject: 'ziti.evt.audit.>', handler: fast.handler });
    const first = Date.now();
    await bus.publish(subject(1), event(1));
    const firstMs = Date.now() - first;
    // Not known to be slow yet: waited for, up to the publish wait.
    expect(firstMs).toBeGreaterThanOrEqual(90);
    expect(firstMs).toBeLessThan(800);
    const rest = Date.now();
    for (let n = 2; n <= 20; n++) {
      await bus.publish(subject(n), event(n));
      expect(fast.handled.at(-1)).toBe(`audit:${n}`);
    }
    expect(Date.now() - rest).toBeLessThan(800);
    slowMs = 0;
    await waitFor(() => slowSeen.length === 20, 'the slow consumer');
    expect(slowSeen).toEqual(ids(1, 20));
    // It kept up again (its last batch was quick): waited for again.
    await bus.publish(subject(21), event(21));
    expect(slowSeen.at(-1)).toBe('audit:21');
  });

  it('bounds what waits for a consumer that falls behind: its oldest events are dropped, loudly', async () => {
    const { lines, logger } = captureLogs();
    const bus = makeBus({ logger, consumerBacklog: { events: 5 }, publishWaitMs: 50 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stuck: string[] = [];
    const stuckConsumer = await bus.consume({
      durable: 'stuck',
      subject: 'ziti.evt.audit.>',
      handler: async (batch) => {
        await gate;
        stuck.push(...batch.map((d) => d.event.id));
      },
    });
    const healthy = recorder();
    await bus.consume({ durable: 'healthy', subject: 'ziti.evt.audit.>', handler: healthy.handler });
    for (let n = 1; n <= 20; n++) await bus.publish(subject(n), event(n));
    expect(healthy.handled).toEqual(ids(1, 20));
    expect(await stuckConsumer.pending!()).toBe(5);
    const dropped = lines.filter((l) => l.includes('fell too far behind'));
    expect(dropped).toHaveLength(1);
    expect(JSON.parse(dropped[0]!)).toMatchObject({ level: 50, consumer: 'stuck', backlogEvents: 5 });
    release();
    // Event 1 was in hand; 2..15 were dropped; the last five are still to come: a gap it will see.
    await waitFor(() => stuck.length === 6, 'the stuck consumer');
    expect(stuck).toEqual(['audit:1', ...ids(16, 20)]);
    await waitFor(() => lines.some((l) => l.includes('caught up after dropping')), 'the catch-up line');
    expect(lines.find((l) => l.includes('caught up after dropping'))).toContain('"dropped":14');
  });

  it('bounds the backlog by bytes too', async () => {
    const bus = makeBus({ consumerBacklog: { bytes: 2_000 }, publishWaitMs: 20 });
    const stuck = await bus.consume({
      durable: 'stuck',
      subject: 'ziti.evt.audit.>',
      handler: () => new Promise(() => undefined),
    });
    const big = (n: number) => ({ ...event(n), data: { pad: 'x'.repeat(500) } });
    for (let n = 1; n <= 20; n++) await bus.publish(subject(n), big(n));
    const pending = await stuck.pending!();
    expect(pending).toBeGreaterThan(0);
    expect(pending * 500).toBeLessThanOrEqual(2_000);
  });

  it('holds published events until openEvents, then delivers them in order', async () => {
    const bus = makeBus({ holdEvents: true });
    const consumer = recorder();
    await bus.consume({ durable: 'c', subject: 'ziti.evt.audit.>', handler: consumer.handler });
    let published = false;
    const publishing = (async () => {
      for (let n = 1; n <= 3; n++) await bus.publish(subject(n), event(n));
      published = true;
    })();
    await new Promise((r) => setImmediate(r));
    expect(published).toBe(false);
    expect(consumer.seen).toEqual([]);
    bus.openEvents();
    await publishing;
    expect(consumer.handled).toEqual(ids(1, 3));
  });

  it('instances of one durable share its queue in order; a durable stopped keeps it for its next start', async () => {
    const bus = makeBus();
    const a = recorder();
    const b = recorder();
    const first = await bus.consume({ durable: 'shared', subject: 'ziti.evt.audit.>', handler: a.handler });
    const second = await bus.consume({ durable: 'shared', subject: 'ziti.evt.audit.>', handler: b.handler });
    for (let n = 1; n <= 6; n++) await bus.publish(subject(n), event(n));
    expect([...a.handled, ...b.handled].sort()).toEqual(ids(1, 6).sort());
    expect(a.handled.length).toBeGreaterThan(0);
    expect(b.handled.length).toBeGreaterThan(0);
    await first.stop();
    await second.stop();
    // Published while no instance runs: kept for the durable, as JetStream does.
    for (let n = 7; n <= 9; n++) await bus.publish(subject(n), event(n));
    const c = recorder();
    const third = await bus.consume({ durable: 'shared', subject: 'ziti.evt.audit.>', handler: c.handler });
    await waitFor(() => c.handled.length === 3, 'what was kept');
    expect(c.handled).toEqual(ids(7, 9));
    expect(third.fresh).toBe(false);
  });

  it('a handler that throws has its whole batch redelivered, logged', async () => {
    const { lines, logger } = captureLogs();
    const bus = makeBus({ logger });
    let calls = 0;
    const handled: string[] = [];
    await bus.consume({
      durable: 'thrower',
      subject: 'ziti.evt.audit.>',
      handler: async (batch) => {
        if (calls++ === 0) throw new Error('database away');
        handled.push(...batch.map((d) => d.event.id));
      },
    });
    await bus.publish(subject(1), event(1));
    await waitFor(() => handled.length === 1, 'the redelivery');
    expect(
      lines.some((l) => l.includes('event batch failed; redelivering') && l.includes('"consumer":"thrower"')),
    ).toBe(true);
  });

  it('stops redelivering when the bus closes, and a stop waits for the batch in hand', async () => {
    const bus = makeBus({ redeliveryDelayMs: () => 10 });
    const failing = recorder(() => true);
    await bus.consume({ durable: 'failing', subject: 'ziti.evt.audit.>', handler: failing.handler });
    let finished = false;
    const slow = await bus.consume({
      durable: 'slow',
      subject: 'ziti.evt.audit.>',
      handler: async () => {
        await new Promise((r) => setTimeout(r, 100));
        finished = true;
      },
    });
    await bus.publish(subject(1), event(1));
    await waitFor(() => failing.seen.length >= 3, 'a few redeliveries');
    await slow.stop();
    expect(finished).toBe(true);
    await bus.close();
    const attempts = failing.seen.length;
    await new Promise((r) => setTimeout(r, 60));
    expect(failing.seen.length).toBe(attempts);
  });
});
