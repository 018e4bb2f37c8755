import type { DialTerminator, TerminatorPrecedence } from '@ziti/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../../test/support/prng.ts';
import {
  DynamicCosts,
  type Selection,
  biasedCost,
  selectTerminator,
  unbiasedCost,
} from './terminator-selection.domain.ts';

/**
 * Terminator selection against the reference's rules (ziti `controller/network/network.go
 * selectPath`, `controller/xt/costs.go`, `xt/failure.go`, `xt_common/cost_visitor.go`,
 * `xt_smartrouting`, `xt_weighted`, `xt_random`).
 */

const max16 = 65_535;

function terminator(id: string, o: Partial<DialTerminator> = {}): DialTerminator {
  return {
    id,
    routerId: 'er-1',
    binding: 'edge',
    address: `addr-${id}`,
    instanceId: '',
    cost: 0,
    precedence: 'default',
    peerData: {},
    hostId: 'host-1',
    routerOnline: true,
    createdAt: '2024-01-01T00:00:00.000Z',
    ...o,
  };
}

type Input = Parameters<typeof selectTerminator>[0];
function select(terminators: DialTerminator[], o: Partial<Input> = {}): Selection {
  return selectTerminator({
    serviceId: 'svc-1',
    strategy: 'smartrouting',
    instanceId: '',
    terminators,
    dynamicCost: () => 0,
    sourceRouterId: 'near',
    pathCost: () => 0,
    ...o,
  });
}

function selected(s: Selection): DialTerminator {
  if (s.outcome !== 'selected') throw new Error(`expected a selection, got ${s.outcome}: ${s.message}`);
  return s.terminator;
}

function tally(n: number, pick: () => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < n; i++) {
    const id = pick();
    counts[id] = (counts[id] ?? 0) + 1;
  }
  return counts;
}

describe('precedence bands (xt costs.go)', () => {
  it.each<[TerminatorPrecedence, number, number]>([
    ['required', 0, max16 * 4 - 1],
    ['default', max16 * 4, max16 * 8 - 1],
    ['failed', max16 * 8, max16 * 12 - 1],
  ])('%s owns [%i, %i]', (precedence, min, max) => {
    expect(biasedCost(precedence, 0)).toBe(min);
    expect(biasedCost(precedence, 10)).toBe(min + 10);
    expect(biasedCost(precedence, max - min)).toBe(max);
    expect(biasedCost(precedence, 10_000_000)).toBe(max);
    expect(unbiasedCost(precedence, min + 123)).toBe(123);
  });

  it('every required before every default before every failed, whatever their costs', () => {
    const ts = [
      terminator('failed-cheap', { precedence: 'failed', cost: 0 }),
      terminator('default-dear', { precedence: 'default', cost: max16 }),
      terminator('required-dearest', { precedence: 'required', cost: max16 }),
      terminator('default-cheap', { precedence: 'default', cost: 0 }),
      terminator('required-cheap', { precedence: 'required', cost: 1 }),
      terminator('failed-dear', { precedence: 'failed', cost: max16 }),
    ];
    const s = select(ts, { dynamicCost: () => max16, pathCost: () => 10_000_000 });
    if (s.outcome !== 'selected') throw new Error(s.outcome);
    // Huge path costs push every terminator to its band's ceiling: bands still never overlap.
    expect(s.candidates.map((c) => c.terminator.precedence)).toEqual([
      'required',
      'required',
      'default',
      'default',
      'failed',
      'failed',
    ]);
    expect(s.candidates.map((c) => c.routeCost)).toEqual([
      max16 * 4 - 1,
      max16 * 4 - 1,
      max16 * 8 - 1,
      max16 * 8 - 1,
      max16 * 12 - 1,
      max16 * 12 - 1,
    ]);
    expect(s.terminator.precedence).toBe('required');
  });

  it('orders by cost within a band: static + dynamic + path', () => {
    const ts = [
      terminator('a', { cost: 30, routerId: 'r-a' }),
      terminator('b', { cost: 10, routerId: 'r-b' }),
      terminator('c', { cost: 5, routerId: 'r-c' }),
      terminator('d', { cost: 0, routerId: 'r-d' }),
    ];
    const dynamic: Record<string, number> = { a: 0, b: 0, c: 20, d: 2 };
    const path: Record<string, number> = { 'r-a': 0, 'r-b': 1, 'r-c': 0, 'r-d': 40 };
    const s = select(ts, { dynamicCost: (id) => dynamic[id]!, pathCost: (r) => path[r] });
    if (s.outcome !== 'selected') throw new Error(s.outcome);
    expect(s.candidates.map((c) => [c.terminator.id, c.routeCost])).toEqual([
      ['b', max16 * 4 + 11],
      ['c', max16 * 4 + 25],
      ['a', max16 * 4 + 30],
      ['d', max16 * 4 + 42],
    ]);
    expect(s.terminator.id).toBe('b');
  });

  it('a required terminator wins over a cheaper default one', () => {
    const s = select([
      terminator('cheap-default', { cost: 0 }),
      terminator('dear-required', { cost: 60_000, precedence: 'required' }),
    ]);
    expect(selected(s).id).toBe('dear-required');
  });

  it('a failed terminator is used only when nothing else is there', () => {
    expect(selected(select([terminator('f', { precedence: 'failed' })])).id).toBe('f');
    expect(selected(select([terminator('f', { precedence: 'failed' }), terminator('d', { cost: max16 })])).id).toBe(
      'd',
    );
  });
});

describe('selectTerminator: candidates and outcomes (network.go selectPath)', () => {
  it('no terminators at all: noTerminators', () => {
    expect(select([])).toEqual({ outcome: 'noTerminators', message: 'service svc-1 has no terminators' });
  });

  it('only the terminators of the dialled instance id count', () => {
    const ts = [
      terminator('plain', { cost: 0 }),
      terminator('inst-a', { instanceId: 'a', cost: 50 }),
      terminator('inst-a2', { instanceId: 'a', cost: 10 }),
      terminator('inst-b', { instanceId: 'b', cost: 0 }),
    ];
    const a = select(ts, { instanceId: 'a' });
    if (a.outcome !== 'selected') throw new Error(a.outcome);
    expect(a.candidates.map((c) => c.terminator.id)).toEqual(['inst-a2', 'inst-a']);
    const none = select(ts, { instanceId: '' });
    if (none.outcome !== 'selected') throw new Error(none.outcome);
    expect(none.candidates.map((c) => c.terminator.id)).toEqual(['plain']);
  });

  it('terminators exist but none for the instance id: noTerminators for that instance', () => {
    expect(select([terminator('x', { instanceId: 'a' })], { instanceId: 'b' })).toEqual({
      outcome: 'noTerminators',
      message: 'service svc-1 has no terminators for instanceId b',
    });
  });

  it('terminators on offline routers are left out', () => {
    const s = select([
      terminator('offline-cheap', { cost: 0, routerOnline: false }),
      terminator('online-dear', { cost: 500, routerId: 'er-2' }),
    ]);
    if (s.outcome !== 'selected') throw new Error(s.outcome);
    expect(s.candidates.map((c) => c.terminator.id)).toEqual(['online-dear']);
  });

  it('every router of the instance offline: noOnlineTerminators', () => {
    const ts = [terminator('a', { routerOnline: false }), terminator('b', { routerOnline: false, instanceId: 'z' })];
    expect(select(ts)).toEqual({
      outcome: 'noOnlineTerminators',
      message: 'service svc-1 has no online terminators for instanceId ',
    });
    // Offline terminators of another instance do not make it "offline".
    expect(select(ts, { instanceId: 'y' }).outcome).toBe('noTerminators');
  });

  it('a router without a path is left out', () => {
    const s = select(
      [terminator('unreachable', { routerId: 'far' }), terminator('local', { routerId: 'near', cost: 900 })],
      { pathCost: (r) => (r === 'near' ? 0 : undefined) },
    );
    if (s.outcome !== 'selected') throw new Error(s.outcome);
    expect(s.candidates.map((c) => c.terminator.id)).toEqual(['local']);
  });

  it('terminators none of which a path reaches: noPath, as errorz.MultipleErrors says it', () => {
    const noPath = { pathCost: (r: string) => (r === 'near' ? 0 : undefined) };
    expect(select([terminator('a', { routerId: 'far' })], noPath)).toEqual({
      outcome: 'noPath',
      message: "can't route from near -> far",
    });
    expect(select([terminator('a', { routerId: 'far' }), terminator('b', { routerId: 'farther' })], noPath)).toEqual({
      outcome: 'noPath',
      message: "multiple errors occurred 0: can't route from near -> far\n 1: can't route from near -> farther\n",
    });
    // A path error is told before offline routers.
    expect(
      select([terminator('a', { routerId: 'far' }), terminator('b', { routerOnline: false })], noPath).outcome,
    ).toBe('noPath');
  });

  it('an unknown strategy: invalidStrategy', () => {
    expect(select([terminator('a')], { strategy: 'sticky-ish' })).toEqual({
      outcome: 'invalidStrategy',
      message: 'unknown terminator strategy sticky-ish',
    });
  });

  it('no strategy means smartrouting', () => {
    const s = select([terminator('dear', { cost: 9 }), terminator('cheap', { cost: 1 })], {
      strategy: '',
      random: () => {
        throw new Error('smartrouting draws nothing');
      },
    });
    expect(selected(s).id).toBe('cheap');
  });
});

describe('strategies', () => {
  const pool = [
    terminator('t10', { cost: 10 }),
    terminator('t30', { cost: 30 }),
    terminator('required-only', { cost: 1_000, precedence: 'required' }),
    terminator('f', { cost: 0, precedence: 'failed' }),
  ];

  it('smartrouting always takes the cheapest, never drawing', () => {
    const ts = [terminator('a', { cost: 7 }), terminator('b', { cost: 3 }), terminator('c', { cost: 5 })];
    for (let i = 0; i < 20; i++) {
      expect(
        selected(
          select(ts, {
            random: () => {
              throw new Error('no draw');
            },
          }),
        ).id,
      ).toBe('b');
    }
  });

  it('random and weighted take the only terminator of the best precedence without drawing', () => {
    for (const strategy of ['random', 'weighted']) {
      const s = select(pool, {
        strategy,
        random: () => {
          throw new Error('no draw');
        },
      });
      expect(selected(s).id).toBe('required-only');
    }
  });

  it('random picks uniformly among the cheapest one’s precedence only', () => {
    const ts = [
      terminator('a', { cost: 1 }),
      terminator('b', { cost: 50 }),
      terminator('c', { cost: 900 }),
      terminator('failed', { cost: 0, precedence: 'failed' }),
    ];
    const random = mulberry32(42);
    const counts = tally(6_000, () => selected(select(ts, { strategy: 'random', random })).id);
    expect(Object.keys(counts).sort()).toEqual(['a', 'b', 'c']);
    for (const id of ['a', 'b', 'c']) expect(counts[id]! / 6_000).toBeCloseTo(1 / 3, 1);
  });

  it('random maps its draw onto the pool, ends included', () => {
    const ts = [terminator('a', { cost: 1 }), terminator('b', { cost: 2 }), terminator('c', { cost: 3 })];
    expect(selected(select(ts, { strategy: 'random', random: () => 0 })).id).toBe('a');
    expect(selected(select(ts, { strategy: 'random', random: () => 0.5 })).id).toBe('b');
    expect(selected(select(ts, { strategy: 'random', random: () => 0.999999 })).id).toBe('c');
  });

  it('weighted between two: each with the other’s share of the total cost (xt_weighted)', () => {
    const ts = [terminator('t10', { cost: 10 }), terminator('t30', { cost: 30 })];
    // Thresholds 1 − 10/40 = 0.75, then 1.
    expect(selected(select(ts, { strategy: 'weighted', random: () => 0 })).id).toBe('t10');
    expect(selected(select(ts, { strategy: 'weighted', random: () => 0.7499 })).id).toBe('t10');
    expect(selected(select(ts, { strategy: 'weighted', random: () => 0.7501 })).id).toBe('t30');
    expect(selected(select(ts, { strategy: 'weighted', random: () => 0.9999 })).id).toBe('t30');
    const random = mulberry32(7);
    const counts = tally(8_000, () => selected(select(ts, { strategy: 'weighted', random })).id);
    expect(counts.t10! / 8_000).toBeCloseTo(0.75, 1);
    expect(counts.t30! / 8_000).toBeCloseTo(0.25, 1);
  });

  it('weighted counts dynamic and path costs, and a cost of 0 as 1', () => {
    const ts = [terminator('zero', { cost: 0, routerId: 'r0' }), terminator('three', { cost: 0, routerId: 'r3' })];
    // Unbiased 0 → 1 and 3: thresholds 1 − 1/4 = 0.75.
    const opts = { strategy: 'weighted', pathCost: (r: string) => (r === 'r3' ? 3 : 0) };
    expect(selected(select(ts, { ...opts, random: () => 0.74 })).id).toBe('zero');
    expect(selected(select(ts, { ...opts, random: () => 0.76 })).id).toBe('three');
    const dyn = { strategy: 'weighted', dynamicCost: (id: string) => (id === 'zero' ? 30 : 10) };
    const both = [terminator('zero', { cost: 0 }), terminator('three', { cost: 0 })];
    // 30 vs 10: "three" (10) is the cheaper now and comes first with 1 − 10/40.
    expect(selected(select(both, { ...dyn, random: () => 0.74 })).id).toBe('three');
    expect(selected(select(both, { ...dyn, random: () => 0.76 })).id).toBe('zero');
  });

  it('weighted among many: the cheaper, the more often, all of the best precedence only', () => {
    const ts = [
      terminator('c10', { cost: 10 }),
      terminator('c20', { cost: 20 }),
      terminator('c30', { cost: 30 }),
      terminator('failed', { cost: 0, precedence: 'failed' }),
    ];
    const random = mulberry32(1234);
    const counts = tally(9_000, () => selected(select(ts, { strategy: 'weighted', random })).id);
    expect(counts.failed).toBeUndefined();
    expect(counts.c10!).toBeGreaterThan(counts.c20!);
    expect(counts.c20!).toBeGreaterThan(counts.c30!);
  });
});

describe('DynamicCosts (xt failure.go, xt_common cost_visitor.go)', () => {
  it('a failed dial adds 20', () => {
    const c = new DynamicCosts();
    c.dialFailed('t');
    expect(c.cost('t')).toBe(20);
    c.dialFailed('t');
    expect(c.cost('t')).toBe(40);
    expect(c.cost('other')).toBe(0);
  });

  it('failures add at most 16,383 (MaxUint16 / 4)', () => {
    const c = new DynamicCosts();
    for (let i = 0; i < 2_000; i++) c.dialFailed('t');
    expect(c.cost('t')).toBe(16_383);
  });

  it('a successful dial takes back 2 of what failures added and adds its circuit’s 2', () => {
    const c = new DynamicCosts();
    c.dialSucceeded('fresh');
    expect(c.cost('fresh')).toBe(2);
    c.dialFailed('t');
    c.dialSucceeded('t');
    expect(c.cost('t')).toBe(20); // 20 + 2 − 2
    c.circuitRemoved('t');
    expect(c.cost('t')).toBe(18); // the failure is now 18
  });

  it('a success credits only what failures added', () => {
    const c = new DynamicCosts();
    c.dialFailed('t');
    for (let i = 0; i < 10; i++) c.dialSucceeded('t'); // credits 2 each: the 20 is paid back
    for (let i = 0; i < 10; i++) c.circuitRemoved('t');
    expect(c.cost('t')).toBe(0);
    c.dialSucceeded('t'); // nothing left to credit
    expect(c.cost('t')).toBe(2);
  });

  it('a removed circuit takes its 2 away and never goes below 0', () => {
    const c = new DynamicCosts();
    c.dialSucceeded('t');
    c.dialSucceeded('t');
    c.circuitRemoved('t');
    expect(c.cost('t')).toBe(2);
    c.circuitRemoved('t');
    c.circuitRemoved('t');
    expect(c.cost('t')).toBe(0);
  });

  it('credit over time forgives failures, 5 at a time, and nothing else', () => {
    const c = new DynamicCosts();
    c.dialFailed('t');
    c.dialSucceeded('circuit-only');
    c.creditOverTime();
    expect(c.cost('t')).toBe(15);
    expect(c.cost('circuit-only')).toBe(2);
    c.creditOverTime();
    c.creditOverTime();
    c.creditOverTime();
    expect(c.cost('t')).toBe(0);
    c.creditOverTime();
    expect(c.cost('t')).toBe(0);
    c.creditOverTime(50);
    expect(c.cost('circuit-only')).toBe(2);
  });

  it('forget drops a terminator’s costs and failures', () => {
    const c = new DynamicCosts();
    c.dialFailed('t');
    c.dialSucceeded('t');
    c.forget('t');
    expect(c.cost('t')).toBe(0);
    c.dialSucceeded('t');
    expect(c.cost('t')).toBe(2);
  });

  it('the cost is never above 65,535', () => {
    const c = new DynamicCosts();
    for (let i = 0; i < 40_000; i++) c.dialSucceeded('t');
    expect(c.cost('t')).toBe(max16);
    c.dialFailed('t');
    expect(c.cost('t')).toBe(max16);
  });

  /**
   * The reference's arithmetic, restated from the Go (uint16 maps, saturating updates), as the
   * model every sequence of events is checked against.
   */
  class ReferenceModel {
    readonly costs = new Map<string, number>();
    readonly failures = new Map<string, number>();
    private update(id: string, f: (cost: number) => number) {
      this.costs.set(id, f(this.costs.get(id) ?? 0));
    }
    cost(id: string) {
      return this.costs.get(id) ?? 0;
    }
    private successWithCredit(id: string, credit: number): number {
      const val = this.failures.get(id);
      if (val === undefined) return 0;
      if (val === 0) {
        this.failures.delete(id);
        return 0;
      }
      if (val < credit) {
        this.failures.set(id, 0);
        return val;
      }
      this.failures.set(id, val - credit);
      return credit;
    }
    dialFailed(id: string) {
      const current = this.failures.get(id);
      let change: number;
      if (current === undefined) {
        change = 20;
        this.failures.set(id, 20);
      } else if (current + 20 > 16_383) {
        change = 16_383 - current;
        this.failures.set(id, 16_383);
      } else {
        change = 20;
        this.failures.set(id, current + 20);
      }
      if (change > 0) this.update(id, (cost) => (cost < max16 - change ? cost + change : max16));
    }
    dialSucceeded(id: string) {
      const credit = this.successWithCredit(id, 2);
      if (credit !== 2) {
        const increase = 2 - credit;
        this.update(id, (cost) => (cost < max16 - increase ? cost + increase : max16));
      }
    }
    circuitRemoved(id: string) {
      this.update(id, (cost) => (cost > 2 ? cost - 2 : 0));
    }
    creditOverTime(credit: number) {
      for (const id of [...this.failures.keys()]) {
        const actual = this.successWithCredit(id, credit);
        this.update(id, (cost) => (cost < actual ? 0 : cost - actual));
      }
    }
  }

  const ids = ['a', 'b', 'c'];
  const op = fc.oneof(
    fc.record({
      kind: fc.constant('failed' as const),
      id: fc.constantFrom(...ids),
      times: fc.integer({ min: 1, max: 900 }),
    }),
    fc.record({
      kind: fc.constant('succeeded' as const),
      id: fc.constantFrom(...ids),
      times: fc.integer({ min: 1, max: 40_000 }),
    }),
    fc.record({
      kind: fc.constant('removed' as const),
      id: fc.constantFrom(...ids),
      times: fc.integer({ min: 1, max: 40_000 }),
    }),
    fc.record({ kind: fc.constant('credit' as const), id: fc.constant(''), times: fc.integer({ min: 1, max: 300 }) }),
  );

  it('any sequence of events keeps every cost an integer in 0..65535, as the reference computes it (property)', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const costs = new DynamicCosts();
        const model = new ReferenceModel();
        for (const o of ops) {
          // Long runs are compressed: the same event repeated `times` times.
          for (let i = 0; i < Math.min(o.times, 200); i++) {
            for (const target of [costs, model]) {
              if (o.kind === 'failed') target.dialFailed(o.id);
              else if (o.kind === 'succeeded') target.dialSucceeded(o.id);
              else if (o.kind === 'removed') target.circuitRemoved(o.id);
              else target.creditOverTime(5);
            }
          }
          for (const id of ids) {
            const cost = costs.cost(id);
            expect(Number.isInteger(cost)).toBe(true);
            expect(cost).toBeGreaterThanOrEqual(0);
            expect(cost).toBeLessThanOrEqual(max16);
            expect(cost).toBe(model.cost(id));
          }
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a selection with any dynamic costs stays in its precedence band (property)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            cost: fc.integer({ min: 0, max: max16 }),
            dynamic: fc.integer({ min: 0, max: max16 }),
            path: fc.integer({ min: 0, max: 10_000_000 }),
            precedence: fc.constantFrom<TerminatorPrecedence>('required', 'default', 'failed'),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        (specs) => {
          const ts = specs.map((s, i) =>
            terminator(`t${i}`, { cost: s.cost, precedence: s.precedence, routerId: `r${i}` }),
          );
          const s = select(ts, {
            dynamicCost: (id) => specs[Number(id.slice(1))]!.dynamic,
            pathCost: (r) => specs[Number(r.slice(1))]!.path,
          });
          if (s.outcome !== 'selected') throw new Error(s.outcome);
          const rank = { required: 0, default: 1, failed: 2 };
          for (let i = 1; i < s.candidates.length; i++) {
            expect(s.candidates[i]!.routeCost).toBeGreaterThanOrEqual(s.candidates[i - 1]!.routeCost);
            expect(rank[s.candidates[i]!.terminator.precedence]).toBeGreaterThanOrEqual(
              rank[s.candidates[i - 1]!.terminator.precedence],
            );
          }
          expect(s.terminator).toBe(s.candidates[0]!.terminator);
          const best = Math.min(...specs.map((x) => rank[x.precedence]));
          expect(rank[s.terminator.precedence]).toBe(best);
        },
      ),
    );
  });
});

/** The reference reports a missing or offline terminator before it looks the strategy up. */
describe('selectTerminator: outcomes in the order of the reference', () => {
  it('an unknown strategy is reported only once there are candidates (network.go checks it after them)', () => {
    // selectPath returns NoOnlineTerminators / NoTerminators before it looks the strategy up.
    expect(select([terminator('a', { routerOnline: false })], { strategy: 'nope' }).outcome).toBe(
      'noOnlineTerminators',
    );
    expect(select([terminator('a', { instanceId: 'x' })], { strategy: 'nope' }).outcome).toBe('noTerminators');
  });
});
