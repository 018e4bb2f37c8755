import type { DialTerminator, TerminatorPrecedence } from '@ziti/contracts';

/**
 * Which terminator a dial goes to (ziti `controller/network/network.go selectPath`, `controller/xt`):
 * the terminators of the dialled instance whose router is online, each costed as its static cost +
 * the strategy's dynamic cost + the path's cost, biased by precedence (every `required` before every
 * `default` before every `failed`), cheapest first; the service's strategy picks among them.
 */

const maxUint16 = 65_535;
/** xt `costs.go`: each precedence owns a band of route costs. */
const precedenceBase: Record<TerminatorPrecedence, number> = {
  required: 0,
  default: maxUint16 * 4,
  failed: maxUint16 * 8,
};
const precedenceMax: Record<TerminatorPrecedence, number> = {
  required: maxUint16 * 4 - 1,
  default: maxUint16 * 8 - 1,
  failed: maxUint16 * 12 - 1,
};

export function biasedCost(precedence: TerminatorPrecedence, unbiased: number): number {
  return Math.min(precedenceBase[precedence] + unbiased, precedenceMax[precedence]);
}

export function unbiasedCost(precedence: TerminatorPrecedence, routeCost: number): number {
  return routeCost - precedenceBase[precedence];
}

export interface CostedTerminator {
  terminator: DialTerminator;
  routeCost: number;
}

export const terminatorStrategies = ['smartrouting', 'weighted', 'random'] as const;
export type TerminatorStrategy = (typeof terminatorStrategies)[number];

export type Selection =
  | { outcome: 'selected'; terminator: DialTerminator; candidates: CostedTerminator[] }
  | { outcome: 'noTerminators'; message: string }
  | { outcome: 'noOnlineTerminators'; message: string }
  /** Terminators on online routers, none of them reachable over the links (`CircuitFailureNoPath`). */
  | { outcome: 'noPath'; message: string }
  | { outcome: 'invalidStrategy'; message: string };

/**
 * The dynamic part of terminator costs, per controller process as in the reference (xt
 * `failure.go`, `xt_common/cost_visitor.go`): a failed dial adds 20 (at most 16,383), a successful
 * one takes back 2 of what failures added and adds the circuit's 2, a closed circuit takes its 2
 * away, and 5 of what failures added is forgiven every minute.
 */
export class DynamicCosts {
  private readonly costs = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  private static readonly failureCost = 20;
  private static readonly maxFailureCost = Math.floor(maxUint16 / 4);
  private static readonly successCredit = 2;
  private static readonly circuitCost = 2;

  cost(terminatorId: string): number {
    return this.costs.get(terminatorId) ?? 0;
  }

  private add(terminatorId: string, delta: number): void {
    const next = Math.max(0, Math.min(maxUint16, this.cost(terminatorId) + delta));
    if (next === 0) this.costs.delete(terminatorId);
    else this.costs.set(terminatorId, next);
  }

  dialFailed(terminatorId: string): void {
    const current = this.failures.get(terminatorId) ?? 0;
    const next = Math.min(DynamicCosts.maxFailureCost, current + DynamicCosts.failureCost);
    this.failures.set(terminatorId, next);
    this.add(terminatorId, next - current);
  }

  dialSucceeded(terminatorId: string): void {
    const failed = this.failures.get(terminatorId) ?? 0;
    const credit = Math.min(failed, DynamicCosts.successCredit);
    if (failed - credit === 0) this.failures.delete(terminatorId);
    else this.failures.set(terminatorId, failed - credit);
    this.add(terminatorId, DynamicCosts.circuitCost - credit);
  }

  circuitRemoved(terminatorId: string): void {
    this.add(terminatorId, -DynamicCosts.circuitCost);
  }

  /** Forgives part of every terminator's failures (the reference: 5 a minute). */
  creditOverTime(credit = 5): void {
    for (const [id, failed] of [...this.failures]) {
      const forgiven = Math.min(failed, credit);
      if (failed - forgiven === 0) this.failures.delete(id);
      else this.failures.set(id, failed - forgiven);
      this.add(id, -forgiven);
    }
  }

  forget(terminatorId: string): void {
    this.costs.delete(terminatorId);
    this.failures.delete(terminatorId);
  }
}

/**
 * Costs and orders the candidates and lets the strategy pick. `pathCost` is the cost of the path
 * from the dialling router (`sourceRouterId`) to a terminator's router (0 for the same router), or
 * undefined when there is none.
 */
export function selectTerminator(input: {
  serviceId: string;
  strategy: string;
  instanceId: string;
  terminators: DialTerminator[];
  dynamicCost: (terminatorId: string) => number;
  sourceRouterId: string;
  pathCost: (routerId: string) => number | undefined;
  random?: () => number;
}): Selection {
  if (input.terminators.length === 0)
    return { outcome: 'noTerminators', message: `service ${input.serviceId} has no terminators` };
  const candidates: CostedTerminator[] = [];
  let offline = false;
  const pathErrors: string[] = [];
  for (const t of input.terminators) {
    if (t.instanceId !== input.instanceId) continue;
    if (!t.routerOnline) {
      offline = true;
      continue;
    }
    const path = input.pathCost(t.routerId);
    if (path === undefined) {
      pathErrors.push(`can't route from ${input.sourceRouterId} -> ${t.routerId}`);
      continue;
    }
    const unbiased = t.cost + input.dynamicCost(t.id) + path;
    candidates.push({ terminator: t, routeCost: biasedCost(t.precedence, unbiased) });
  }
  if (candidates.length === 0) {
    // errorz.MultipleErrors: one error alone, else numbered.
    if (pathErrors.length > 0)
      return {
        outcome: 'noPath',
        message:
          pathErrors.length === 1
            ? pathErrors[0]!
            : `multiple errors occurred${pathErrors.map((e, i) => ` ${i}: ${e}\n`).join('')}`,
      };
    return offline
      ? {
          outcome: 'noOnlineTerminators',
          message: `service ${input.serviceId} has no online terminators for instanceId ${input.instanceId}`,
        }
      : {
          outcome: 'noTerminators',
          message: `service ${input.serviceId} has no terminators for instanceId ${input.instanceId}`,
        };
  }
  // As the reference, the strategy is looked up once there are candidates.
  const strategy = (input.strategy || 'smartrouting') as TerminatorStrategy;
  if (!terminatorStrategies.includes(strategy))
    return { outcome: 'invalidStrategy', message: `unknown terminator strategy ${input.strategy}` };
  candidates.sort((a, b) => a.routeCost - b.routeCost);
  const random = input.random ?? Math.random;
  return { outcome: 'selected', terminator: pick(strategy, candidates, random).terminator, candidates };
}

/** The terminators of the cheapest one's precedence (xt `GetRelatedTerminators`). */
function related(candidates: CostedTerminator[]): CostedTerminator[] {
  const first = candidates[0]!.terminator.precedence;
  return candidates.filter((c) => c.terminator.precedence === first);
}

function pick(strategy: TerminatorStrategy, candidates: CostedTerminator[], random: () => number): CostedTerminator {
  if (strategy === 'smartrouting') return candidates[0]!;
  const pool = related(candidates);
  if (pool.length === 1) return pool[0]!;
  if (strategy === 'random') return pool[Math.min(pool.length - 1, Math.floor(random() * pool.length))]!;
  // weighted (xt_weighted): the cheaper, the likelier.
  const costs = pool.map((c) => Math.max(1, unbiasedCost(c.terminator.precedence, c.routeCost)));
  const total = costs.reduce((a, b) => a + b, 0);
  const thresholds: number[] = [];
  let running = 0;
  for (const cost of costs) {
    running += 1 - cost / total;
    thresholds.push(running);
  }
  const selected = random() * running;
  const index = thresholds.findIndex((t) => selected < t);
  return pool[index < 0 ? 0 : index]!;
}
