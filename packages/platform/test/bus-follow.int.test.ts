import { connect } from 'nats';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  type Bus,
  type EventEnvelope,
  type FollowEnd,
  type Follower,
  InProcessBus,
  NatsBus,
  createLogger,
} from '../src/index.ts';

/**
 * `Bus.follow`, the same contract on real NATS (JetStream, an ordered consumer) and on the
 * in-process bus (its bounded log): delivery from a stream position with the positions, in stream
 * order, resume with nothing lost and nothing doubled, loss reported rather than skipped, and
 * nothing left behind once stopped.
 */
const logger = createLogger('test', 'silent');
const namespaces: string[] = [];

afterAll(async () => {
  // The streams this file made on the shared NATS server.
  const nc = await connect({ servers: infra.natsUrl });
  const jsm = await nc.jetstreamManager();
  for (const ns of namespaces) await jsm.streams.delete(`ZITI_EVENTS_${ns}`).catch(() => undefined);
  await nc.close();
});

interface Target {
  bus: Bus;
  /** Consumers on the stream (NATS) or followers running (in-process). */
  following(): Promise<number>;
  /** Drops all but the last `keep` events of the stream (retention at work). */
  forget(keep: number): Promise<void>;
  close(): Promise<void>;
}

const targets: Record<string, (o?: { window?: number }) => Promise<Target>> = {
  NATS: async () => {
    const namespace = uniqueName('follow');
    namespaces.push(namespace);
    const bus = await NatsBus.connect({ url: infra.natsUrl, name: 'follow-test', namespace, logger });
    const nc = await connect({ servers: infra.natsUrl });
    const jsm = await nc.jetstreamManager();
    const stream = `ZITI_EVENTS_${namespace}`;
    return {
      bus,
      following: async () =>
        (
          await jsm.consumers
            .list(stream)
            .next()
            .catch(() => [])
        ).length,
      forget: async (keep) => {
        await jsm.streams.purge(stream, { keep });
      },
      close: async () => {
        await bus.close();
        await nc.close();
      },
    };
  },
  'in-process': async (o = {}) => {
    const bus = new InProcessBus({ followWindow: { events: o.window ?? 5 } });
    return {
      bus,
      following: async () => bus.followerCount,
      forget: async () => {
        throw new Error('the in-process log forgets by its window');
      },
      close: () => bus.close(),
    };
  },
};

let counter = 0;
function event(type: string, data: Record<string, unknown> = {}): EventEnvelope {
  counter++;
  return {
    id: `test:${Date.now()}-${counter}`,
    type,
    version: 1,
    source: 'test',
    sequence: counter,
    occurredAt: new Date().toISOString(),
    data: { n: counter, ...data },
  };
}

/** A follower that records what it gets. */
async function follower(bus: Bus, subjects: string[], afterSequence?: number) {
  const got: { id: string; sequence: number; subject: string }[] = [];
  const ends: FollowEnd[] = [];
  const lost: { afterSequence: number; resumesAt: number }[] = [];
  const handle: Follower = await bus.follow!(
    subjects,
    { ...(afterSequence !== undefined ? { afterSequence } : {}), onLost: (gap) => lost.push(gap) },
    (e, sequence) => got.push({ id: e.id, sequence, subject: e.type }),
    (end) => ends.push(end),
  );
  return { got, ends, lost, handle, ids: () => got.map((g) => g.id) };
}

describe.each(Object.keys(targets))('Bus.follow on %s', (name) => {
  const make = targets[name]!;

  it('delivers the events published from now on, in order, with increasing positions', async () => {
    const t = await make();
    try {
      const a = await follower(t.bus, ['ziti.evt.test.a']);
      const before = event('a');
      await t.bus.publish('ziti.evt.test.other', event('other'));
      const sent = [before, event('a'), event('a')];
      for (const e of sent) await t.bus.publish('ziti.evt.test.a', e);
      await waitFor(() => a.got.length === 3, 'three events');
      expect(a.ids()).toEqual(sent.map((e) => e.id));
      const positions = a.got.map((g) => g.sequence);
      expect([...positions].sort((x, y) => x - y)).toEqual(positions);
      expect(new Set(positions).size).toBe(3);
      await a.handle.stop();
      expect(a.ends).toEqual([{ reason: 'stopped' }]);
    } finally {
      await t.close();
    }
  });

  it('resumes after a position with exactly the events after it, then goes on live', async () => {
    const t = await make();
    try {
      const first = await follower(t.bus, ['ziti.evt.test.r']);
      const sent = [event('r'), event('r'), event('r'), event('r')];
      for (const e of sent) await t.bus.publish('ziti.evt.test.r', e);
      await waitFor(() => first.got.length === 4, 'four events');
      await first.handle.stop();

      // The reader kept the position of the second event: it gets the third and fourth, then new ones.
      const resumed = await follower(t.bus, ['ziti.evt.test.r'], first.got[1]!.sequence);
      await waitFor(() => resumed.got.length === 2, 'the two after the position');
      const live = event('r');
      await t.bus.publish('ziti.evt.test.r', live);
      // An event published again (an outbox retry) is the same event: not delivered twice.
      await t.bus.publish('ziti.evt.test.r', sent[3]!);
      await t.bus.publish('ziti.evt.test.r', event('r'));
      await waitFor(() => resumed.got.length === 4, 'the live ones');
      expect(resumed.ids().slice(0, 3)).toEqual([sent[2]!.id, sent[3]!.id, live.id]);
      expect(new Set(resumed.ids()).size).toBe(4);
      expect(resumed.got[0]!.sequence).toBe(first.got[2]!.sequence);
      expect(resumed.lost).toEqual([]);

      // From the last position: only what comes next.
      const atEnd = await follower(t.bus, ['ziti.evt.test.r'], resumed.got[3]!.sequence);
      const next = event('r');
      await t.bus.publish('ziti.evt.test.r', next);
      await waitFor(() => atEnd.got.length === 1, 'the next one');
      expect(atEnd.ids()).toEqual([next.id]);
      await resumed.handle.stop();
      await atEnd.handle.stop();
    } finally {
      await t.close();
    }
  });

  it('pause holds delivery back, resume goes on after the last one delivered; head is the newest position', async () => {
    const t = await make();
    try {
      const f = await follower(t.bus, ['ziti.evt.test.p']);
      const witness = await follower(t.bus, ['ziti.evt.test.w']);
      const first = [event('p'), event('p')];
      for (const e of first) await t.bus.publish('ziti.evt.test.p', e);
      await waitFor(() => f.got.length === 2, 'the first two');
      f.handle.pause();
      const held = [event('p'), event('p')];
      for (const e of held) await t.bus.publish('ziti.evt.test.p', e);
      // Published after the held ones: once the witness has it, the paused follower would have had them.
      await t.bus.publish('ziti.evt.test.w', event('w'));
      await waitFor(() => witness.got.length === 1, 'the witness');
      expect(f.got.length).toBe(2);
      expect(await f.handle.head()).toBe(witness.got[0]!.sequence);
      f.handle.resume();
      await waitFor(() => f.got.length === 4, 'the held two');
      expect(f.ids()).toEqual([...first, ...held].map((e) => e.id));
      await t.bus.publish('ziti.evt.test.p', event('p'));
      await waitFor(() => f.got.length === 5, 'a live one after the resume');
      expect(new Set(f.ids()).size).toBe(5);
      await f.handle.stop();
      await witness.handle.stop();
      expect(f.ends).toEqual([{ reason: 'stopped' }]);
    } finally {
      await t.close();
    }
  });

  it('a replay held back and resumed 40 times delivers every event once, in order (2,000 events)', async () => {
    const t = await make({ window: 5_000 });
    try {
      const sent: EventEnvelope[] = [];
      // Mixed sizes, up to 96 KB, as entity changes are.
      for (let i = 0; i < 2_000; i++)
        sent.push(event('m', { pad: 'x'.repeat(i % 50 === 0 ? 96 * 1024 : (i * 37) % 2_000) }));
      const marker = await follower(t.bus, ['ziti.evt.test.m']);
      await t.bus.publish('ziti.evt.test.m', event('m'));
      await waitFor(() => marker.got.length === 1, 'the marker');
      const from = marker.got[0]!.sequence;
      await marker.handle.stop();
      for (const e of sent) await t.bus.publish('ziti.evt.test.m', e);
      const got: string[] = [];
      // Set once follow answers; events may come before that.
      const ref: { handle?: Follower } = {};
      let pauses = 0;
      ref.handle = await t.bus.follow!(
        ['ziti.evt.test.m'],
        { afterSequence: from },
        (e) => {
          got.push(e.id);
          if (got.length % 50 === 0 && ref.handle) {
            pauses++;
            ref.handle.pause();
            setTimeout(() => ref.handle!.resume(), 1);
          }
        },
        () => undefined,
      );
      await waitFor(() => got.length >= 2_000, 'every event', 60_000);
      expect(got).toEqual(sent.map((e) => e.id));
      expect(pauses).toBe(40);
      await ref.handle.stop();
    } finally {
      await t.close();
    }
  });

  it('follows several subjects in one stream order', async () => {
    const t = await make();
    try {
      const both = await follower(t.bus, ['ziti.evt.test.x', 'ziti.evt.test.y.>']);
      const sent: EventEnvelope[] = [];
      for (let i = 0; i < 4; i++) {
        const x = event('x');
        const y = event('y');
        await t.bus.publish('ziti.evt.test.x', x);
        await t.bus.publish('ziti.evt.test.z', event('z'));
        await t.bus.publish('ziti.evt.test.y.deep', y);
        sent.push(x, y);
      }
      await waitFor(() => both.got.length === 8, 'eight events');
      expect(both.ids()).toEqual(sent.map((e) => e.id));
      await both.handle.stop();
    } finally {
      await t.close();
    }
  });

  it('leaves nothing behind once stopped, and delivers nothing after', async () => {
    const t = await make();
    try {
      const before = await t.following();
      const f = await follower(t.bus, ['ziti.evt.test.s']);
      expect(await t.following()).toBe(before + 1);
      await t.bus.publish('ziti.evt.test.s', event('s'));
      await waitFor(() => f.got.length === 1, 'one event');
      await f.handle.stop();
      await f.handle.stop();
      await t.bus.publish('ziti.evt.test.s', event('s'));
      await waitFor(async () => (await t.following()) === before, 'the follower gone');
      // A later follower from now on gets the next event: the one published after stop never reached `f`.
      const g = await follower(t.bus, ['ziti.evt.test.s']);
      await t.bus.publish('ziti.evt.test.s', event('s'));
      await waitFor(() => g.got.length === 1, 'the next follower');
      expect(f.got).toHaveLength(1);
      expect(f.ends).toEqual([{ reason: 'stopped' }]);
      await g.handle.stop();
    } finally {
      await t.close();
    }
  });

  it('ends a follower whose handler throws, once', async () => {
    const t = await make();
    try {
      const ends: FollowEnd[] = [];
      let calls = 0;
      const f = await t.bus.follow!(
        ['ziti.evt.test.t'],
        {},
        () => {
          calls++;
          throw new Error('handler broke');
        },
        (end) => ends.push(end),
      );
      await t.bus.publish('ziti.evt.test.t', event('t'));
      await t.bus.publish('ziti.evt.test.t', event('t'));
      await waitFor(() => ends.length === 1, 'the end');
      expect(ends[0]).toMatchObject({ reason: 'failed', error: { message: 'handler broke' } });
      expect(calls).toBe(1);
      await f.stop();
      expect(ends).toHaveLength(1);
    } finally {
      await t.close();
    }
  });

  it('reports a position it no longer holds, then delivers from the oldest held', async () => {
    const t = await make();
    try {
      const all = await follower(t.bus, ['ziti.evt.test.l']);
      const sent = Array.from({ length: 8 }, () => event('l'));
      for (const e of sent) await t.bus.publish('ziti.evt.test.l', e);
      await waitFor(() => all.got.length === 8, 'eight events');
      await all.handle.stop();
      // The in-process window holds 5 events; the NATS stream is purged down to 5.
      if (name === 'NATS') await t.forget(5);
      const late = await follower(t.bus, ['ziti.evt.test.l'], all.got[0]!.sequence);
      await waitFor(() => late.got.length === 5, 'the five held');
      expect(late.ids()).toEqual(sent.slice(3).map((e) => e.id));
      expect(late.lost).toEqual([{ afterSequence: all.got[0]!.sequence, resumesAt: all.got[3]!.sequence }]);

      // A position past the end (a stream made anew, an earlier run of the process) is reported too.
      const ahead = await follower(t.bus, ['ziti.evt.test.l'], all.got[7]!.sequence + 1_000_000);
      await waitFor(() => ahead.lost.length === 1, 'the loss reported');
      expect(ahead.lost[0]!.resumesAt).toBe(all.got[3]!.sequence);
      await waitFor(() => ahead.got.length === 5, 'the five held');
      await late.handle.stop();
      await ahead.handle.stop();
    } finally {
      await t.close();
    }
  });
});

describe('the in-process log', () => {
  it('resumes after a restart as a loss: its positions are newer than any of an earlier run', async () => {
    const old = new InProcessBus();
    const seen = await follower(old, ['ziti.evt.test.p']);
    await old.publish('ziti.evt.test.p', event('p'));
    await waitFor(() => seen.got.length === 1, 'one event');
    await old.close();
    expect(seen.ends).toMatchObject([{ reason: 'failed' }]);

    const bus = new InProcessBus();
    const next = event('p');
    await bus.publish('ziti.evt.test.p', next);
    const resumed = await follower(bus, ['ziti.evt.test.p'], seen.got[0]!.sequence);
    await waitFor(() => resumed.got.length === 1, 'the event of this run');
    expect(resumed.got[0]!.sequence).toBeGreaterThan(seen.got[0]!.sequence);
    expect(resumed.lost).toHaveLength(1);
    expect(resumed.ids()).toEqual([next.id]);
    await bus.close();
  });

  it('is bounded by bytes as well as by count', async () => {
    const bus = new InProcessBus({ followWindow: { events: 1000, bytes: 4_000 } });
    const big = 'x'.repeat(1_000);
    const all = await follower(bus, ['ziti.evt.test.b']);
    for (let i = 0; i < 10; i++) await bus.publish('ziti.evt.test.b', event('b', { big }));
    await waitFor(() => all.got.length === 10, 'ten events');
    const late = await follower(bus, ['ziti.evt.test.b'], all.got[0]!.sequence);
    await waitFor(() => late.lost.length === 1, 'the loss');
    await new Promise((r) => setImmediate(r));
    expect(late.got.length).toBeGreaterThan(0);
    expect(late.got.length).toBeLessThan(4);
    expect(late.got.at(-1)!.id).toBe(all.got[9]!.id);
    await bus.close();
  });
});
