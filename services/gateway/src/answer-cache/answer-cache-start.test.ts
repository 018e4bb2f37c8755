import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AnswerCache, type AnswerCacheEvent } from './answer-cache.domain.ts';

/**
 * A gateway that starts following while its owner is behind on a source it consumes: the owner's
 * own writes (`own`) and another owner's (`fed`), whose events the owner applies later (its
 * consumer's watermark). Events published before the gateway followed are never delivered to it.
 * Whatever the interleaving, once everything is delivered and applied, no kept answer lacks a
 * change: an answer that reflected a position from before the gateway followed could miss an event
 * it never saw, and would stay stale for good.
 */
type Op =
  | { kind: 'commit'; source: 'own' | 'fed'; who: number | 'all' }
  | { kind: 'consume' }
  | { kind: 'follow' }
  | { kind: 'deliver'; source: 'own' | 'fed' }
  | { kind: 'startRender'; who: number }
  | { kind: 'finishRender'; pick: number }
  | { kind: 'read'; who: number };

const identities = 2;
const source = fc.constantFrom('own' as const, 'fed' as const);
const who = fc.integer({ min: 0, max: identities - 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('commit' as const), source, who: fc.oneof(who, fc.constant('all' as const)) }),
  fc.record({ kind: fc.constant('consume' as const) }),
  fc.record({ kind: fc.constant('follow' as const) }),
  fc.record({ kind: fc.constant('deliver' as const), source }),
  fc.record({ kind: fc.constant('startRender' as const), who }),
  fc.record({ kind: fc.constant('finishRender' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('read' as const), who }),
);

function run(ops: Op[]): void {
  const events: Record<'own' | 'fed', AnswerCacheEvent[]> = { own: [], fed: [] };
  /** Per source and identity, the positions of the commits that changed its answer. */
  const changes = { own: [[], []] as number[][], fed: [[], []] as number[][] };
  const committed = { own: 0, fed: 0 };
  /** Where the gateway's tail stands per source (it starts at the end when it begins to follow). */
  const delivered = { own: 0, fed: 0 };
  let applied = 0;
  let following = false;
  const stateAt = (s: 'own' | 'fed', w: number, p: number) => Math.max(0, ...changes[s][w]!.filter((c) => c <= p));
  const cache = new AnswerCache({
    sources: ['own', 'fed'],
    concerns: (e) =>
      (e.data as { who: number | 'all' }).who === 'all' ? 'all' : String((e.data as { who: number }).who),
    maxEntries: 100,
  });
  const renders: { who: number; own: number; fed: number; ticket: number }[] = [];
  const deliver = (s: 'own' | 'fed') => {
    const e = events[s][delivered[s]];
    if (!following || !e) return;
    delivered[s]++;
    cache.apply(e);
  };
  const check = (w: number, text: string | undefined, current: boolean) => {
    if (text === undefined) return;
    const a = JSON.parse(text) as { own: number; fed: number; at: { own: number; fed: number } };
    expect(a.own).toBe(stateAt('own', w, a.at.own));
    expect(a.fed).toBe(stateAt('fed', w, a.at.fed));
    if (current) {
      expect(a.own).toBe(stateAt('own', w, committed.own));
      expect(a.fed).toBe(stateAt('fed', w, committed.fed));
    }
  };
  for (const o of ops) {
    switch (o.kind) {
      case 'commit': {
        const p = ++committed[o.source];
        for (let w = 0; w < identities; w++) if (o.who === 'all' || o.who === w) changes[o.source][w]!.push(p);
        events[o.source].push({ source: o.source, type: 'x.updated', sequence: p, data: { who: o.who } });
        break;
      }
      case 'consume':
        if (applied < committed.fed) applied++;
        break;
      case 'follow':
        if (following) break;
        following = true;
        // Tail from now: what was published before is never delivered; then the owners' positions.
        delivered.own = committed.own;
        delivered.fed = committed.fed;
        cache.start({ own: committed.own, fed: committed.fed });
        break;
      case 'deliver':
        deliver(o.source);
        break;
      case 'startRender':
        // The owner reads its own position and its consumer's watermark first, then the state.
        renders.push({ who: o.who, own: committed.own, fed: applied, ticket: cache.ticket() });
        break;
      case 'finishRender': {
        if (renders.length === 0) break;
        const [r] = renders.splice(o.pick % renders.length, 1);
        const at = { own: r!.own, fed: r!.fed };
        const text = JSON.stringify({ own: stateAt('own', r!.who, at.own), fed: stateAt('fed', r!.who, at.fed), at });
        cache.fill(String(r!.who), text, at, r!.ticket);
        break;
      }
      case 'read':
        check(o.who, cache.get(String(o.who), undefined), false);
        break;
    }
  }
  // Quiesce: every event delivered, every one applied by the owner: what is kept is current.
  while (delivered.own < events.own.length || delivered.fed < events.fed.length) {
    if (!following) break;
    deliver('own');
    deliver('fed');
  }
  for (let w = 0; w < identities; w++) check(w, cache.get(String(w), undefined), true);
}

describe('an answer cache that starts following late', () => {
  it('keeps no answer that misses an event published before it followed (3,000 runs)', () => {
    fc.assert(
      fc.property(fc.array(op, { minLength: 5, maxLength: 60, size: 'medium' }), (ops) => run(ops)),
      { numRuns: 3_000, seed: 20261203 },
    );
  });

  it('refuses a fill reflecting a position from before it followed, and takes one from after', () => {
    const c = new AnswerCache({ sources: ['own', 'fed'], concerns: () => 'all', maxEntries: 10 });
    c.start({ own: 5, fed: 9 });
    expect(c.fill('i1', 'stale', { own: 5, fed: 8 }, c.ticket())).toBe(false);
    expect(c.fill('i1', 'fresh', { own: 5, fed: 9 }, c.ticket())).toBe(true);
    expect(c.get('i1', undefined)).toBe('fresh');
  });
});
