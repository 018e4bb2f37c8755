import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AnswerCache, type AnswerCacheEvent } from './answer-cache.domain.ts';

/**
 * The answer cache against a model of its owner, over random interleavings of commits, event
 * deliveries (in order, arbitrarily late), renders that start and finish at any time, reads with
 * and without read-your-writes positions, and resets. Whatever the interleaving, a read never gets
 * an answer older than the caller's own write, nor older than a change the gateway has already seen.
 */
type Op =
  | { kind: 'commit'; who: number | 'all' }
  | { kind: 'deliver' }
  | { kind: 'startRender'; who: number }
  | { kind: 'finishRender'; pick: number }
  | { kind: 'read'; who: number; ownWrite: boolean }
  | { kind: 'reset' };

const identities = 2;
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('commit' as const),
    who: fc.oneof(fc.integer({ min: 0, max: identities - 1 }), fc.constant('all' as const)),
  }),
  fc.record({ kind: fc.constant('deliver' as const) }),
  fc.record({ kind: fc.constant('startRender' as const), who: fc.integer({ min: 0, max: identities - 1 }) }),
  fc.record({ kind: fc.constant('finishRender' as const), pick: fc.nat() }),
  fc.record({
    kind: fc.constant('read' as const),
    who: fc.integer({ min: 0, max: identities - 1 }),
    ownWrite: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('reset' as const) }),
);

function run(ops: Op[]): void {
  const events: AnswerCacheEvent[] = [];
  let committed = 0;
  let delivered = 0;
  /** Per identity, the positions of the commits that changed its answer. */
  const changes: number[][] = Array.from({ length: identities }, () => []);
  /** The newest change of `who` at or before `p`: the state an answer at `p` shows. */
  const stateAt = (who: number, p: number) => Math.max(0, ...changes[who]!.filter((c) => c <= p));
  /** Per identity, the newest change the gateway has seen (delivered). */
  const seen: number[] = Array.from({ length: identities }, () => 0);
  const cache = new AnswerCache({
    sources: ['auth'],
    concerns: (e) =>
      (e.data as { who: number | 'all' }).who === 'all' ? 'all' : String((e.data as { who: number }).who),
    maxEntries: 100,
  });
  cache.start();
  const renders: { who: number; at: number; ticket: number }[] = [];
  for (const o of ops) {
    switch (o.kind) {
      case 'commit': {
        committed++;
        for (let w = 0; w < identities; w++) if (o.who === 'all' || o.who === w) changes[w]!.push(committed);
        events.push({ source: 'auth', type: 'x.updated', sequence: committed, data: { who: o.who } });
        break;
      }
      case 'deliver': {
        const e = events[delivered];
        if (!e) break;
        delivered++;
        cache.apply(e);
        const who = (e.data as { who: number | 'all' }).who;
        for (let w = 0; w < identities; w++) if (who === 'all' || who === w) seen[w] = e.sequence;
        break;
      }
      case 'startRender':
        // The owner reads its position first, then the state: the answer is at least that new.
        renders.push({ who: o.who, at: committed, ticket: cache.ticket() });
        break;
      case 'finishRender': {
        if (renders.length === 0) break;
        const [r] = renders.splice(o.pick % renders.length, 1);
        const text = JSON.stringify({ state: stateAt(r!.who, r!.at), at: r!.at });
        cache.fill(String(r!.who), text, { auth: r!.at }, r!.ticket);
        break;
      }
      case 'read': {
        // A caller whose own last write was the newest commit carries it as `after`.
        const after = o.ownWrite ? { auth: committed } : undefined;
        const text = cache.get(String(o.who), after);
        if (text === undefined) break;
        const answer = JSON.parse(text) as { state: number; at: number };
        expect(answer.state).toBe(stateAt(o.who, answer.at));
        if (after) expect(stateAt(o.who, answer.at)).toBe(stateAt(o.who, committed));
        // Never older than a change already delivered to the gateway.
        expect(answer.state).toBeGreaterThanOrEqual(seen[o.who]!);
        break;
      }
      case 'reset':
        cache.reset();
        break;
    }
  }
}

describe('the answer cache under random interleavings', () => {
  it('never serves an answer older than the reader may see (5,000 runs)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 5, maxLength: 60, size: 'medium' }), (ops) => run(ops)),
      {
        numRuns: 5_000,
        seed: 20261125,
      },
    );
  });
});
