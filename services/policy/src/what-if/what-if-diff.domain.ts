import type { AccessPair, PostureLink, WhatIfNamed } from './what-if.ports.ts';

/** An edge router usable by an identity/service pair (the identity may Dial or Bind the service). */
export interface UsableRoute {
  identityId: string;
  serviceId: string;
  edgeRouterId: string;
}

/**
 * What the policy engine derived in one state, read over one scope: the access pairs, the usable
 * routes and the posture links of that scope. The two states of a what-if are read over the same
 * scope, so a pair, route or link absent from one state's facts is absent from that state.
 */
export interface WhatIfFacts {
  access: AccessPair[];
  routes: UsableRoute[];
  posture: PostureLink[];
}

export interface Gains {
  gained: string[];
  lost: string[];
}

/** A posture check applied to a service through a service policy of a type. */
export interface PostureEntry {
  policyId: string;
  type: 'Dial' | 'Bind';
  postureCheckId: string;
}

/** The difference for one service, in ids (sorted). */
export interface ServiceDiff {
  serviceId: string;
  dial: Gains;
  bind: Gains;
  /** Identities whose usable routers for the service differ, with the routers gained and lost. */
  edgeRouters: ({ identityId: string } & Gains)[];
  postureChecks: { started: PostureEntry[]; stopped: PostureEntry[] };
}

const sep = '\u0000';
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function accessMap(pairs: AccessPair[]): Map<string, AccessPair> {
  const out = new Map<string, AccessPair>();
  for (const p of pairs) out.set(`${p.serviceId}${sep}${p.identityId}`, p);
  return out;
}

const routeKey = (r: UsableRoute) => `${r.serviceId}${sep}${r.identityId}${sep}${r.edgeRouterId}`;
const postureKey = (p: PostureLink) => `${p.serviceId}${sep}${p.policyId}${sep}${p.type}${sep}${p.postureCheckId}`;

/** Elements of `a` not in `b` (by key), each once. */
function minus<T>(a: T[], b: T[], key: (t: T) => string): T[] {
  const inB = new Set(b.map(key));
  const seen = new Set<string>();
  return a.filter((t) => {
    const k = key(t);
    if (inB.has(k) || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * The difference between two states' facts, per service: identities gaining or losing Dial and
 * Bind, identity/service pairs whose usable edge routers differ, posture checks that start or stop
 * applying to the service through a service policy. Services without a difference are left out.
 */
export function diffFacts(before: WhatIfFacts, after: WhatIfFacts): ServiceDiff[] {
  const services = new Map<string, ServiceDiff>();
  const of = (serviceId: string): ServiceDiff => {
    let d = services.get(serviceId);
    if (!d) {
      d = {
        serviceId,
        dial: { gained: [], lost: [] },
        bind: { gained: [], lost: [] },
        edgeRouters: [],
        postureChecks: { started: [], stopped: [] },
      };
      services.set(serviceId, d);
    }
    return d;
  };

  const was = accessMap(before.access);
  const now = accessMap(after.access);
  for (const key of new Set([...was.keys(), ...now.keys()])) {
    const b = was.get(key);
    const a = now.get(key);
    const { serviceId, identityId } = (a ?? b)!;
    for (const right of ['dial', 'bind'] as const) {
      const had = b?.[right] ?? false;
      const has = a?.[right] ?? false;
      if (had !== has) of(serviceId)[right][has ? 'gained' : 'lost'].push(identityId);
    }
  }

  const routes = new Map<string, { identityId: string; serviceId: string } & Gains>();
  const route = (r: UsableRoute) => {
    const key = `${r.serviceId}${sep}${r.identityId}`;
    let g = routes.get(key);
    if (!g) routes.set(key, (g = { identityId: r.identityId, serviceId: r.serviceId, gained: [], lost: [] }));
    return g;
  };
  for (const r of minus(after.routes, before.routes, routeKey)) route(r).gained.push(r.edgeRouterId);
  for (const r of minus(before.routes, after.routes, routeKey)) route(r).lost.push(r.edgeRouterId);
  for (const g of routes.values())
    of(g.serviceId).edgeRouters.push({
      identityId: g.identityId,
      gained: g.gained.sort(byCodeUnits),
      lost: g.lost.sort(byCodeUnits),
    });

  const entry = (p: PostureLink): PostureEntry => ({
    policyId: p.policyId,
    type: p.type,
    postureCheckId: p.postureCheckId,
  });
  for (const p of minus(after.posture, before.posture, postureKey))
    of(p.serviceId).postureChecks.started.push(entry(p));
  for (const p of minus(before.posture, after.posture, postureKey))
    of(p.serviceId).postureChecks.stopped.push(entry(p));

  const byEntry = (x: PostureEntry, y: PostureEntry) =>
    byCodeUnits(x.postureCheckId, y.postureCheckId) ||
    byCodeUnits(x.policyId, y.policyId) ||
    byCodeUnits(x.type, y.type);
  const out = [...services.values()].sort((x, y) => byCodeUnits(x.serviceId, y.serviceId));
  for (const d of out) {
    for (const g of [d.dial, d.bind]) {
      g.gained.sort(byCodeUnits);
      g.lost.sort(byCodeUnits);
    }
    d.edgeRouters.sort((x, y) => byCodeUnits(x.identityId, y.identityId));
    d.postureChecks.started.sort(byEntry);
    d.postureChecks.stopped.sort(byEntry);
  }
  return out;
}

/** The ids a difference names, per kind (for one names lookup each). */
export function namedIds(diffs: ServiceDiff[]): Record<WhatIfNamed, string[]> {
  const ids: Record<WhatIfNamed, Set<string>> = {
    identities: new Set(),
    services: new Set(),
    edgeRouters: new Set(),
    postureChecks: new Set(),
    servicePolicies: new Set(),
  };
  for (const d of diffs) {
    ids.services.add(d.serviceId);
    for (const g of [d.dial, d.bind]) for (const id of [...g.gained, ...g.lost]) ids.identities.add(id);
    for (const r of d.edgeRouters) {
      ids.identities.add(r.identityId);
      for (const id of [...r.gained, ...r.lost]) ids.edgeRouters.add(id);
    }
    for (const p of [...d.postureChecks.started, ...d.postureChecks.stopped]) {
      ids.postureChecks.add(p.postureCheckId);
      ids.servicePolicies.add(p.policyId);
    }
  }
  return Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, [...v]])) as Record<WhatIfNamed, string[]>;
}

// ---------------------------------------------------------------------------------------------
// The answer: names, order, counts and the listing limit

export interface Named {
  id: string;
  name: string;
}

export interface IdentityChanges {
  gained: Named[];
  lost: Named[];
  gainedCount: number;
  lostCount: number;
}

export interface PostureChange {
  postureCheck: Named;
  policy: Named;
  policyType: 'Dial' | 'Bind';
}

export interface ServiceChange {
  service: Named;
  dial: IdentityChanges;
  bind: IdentityChanges;
  edgeRouters: { pairs: number; identities: { identity: Named; gained: Named[]; lost: Named[] }[] };
  postureChecks: { started: PostureChange[]; stopped: PostureChange[]; startedCount: number; stoppedCount: number };
}

export interface WhatIfSummary {
  changes: number;
  services: number;
  dialGained: number;
  dialLost: number;
  bindGained: number;
  bindLost: number;
  edgeRouterPairs: number;
  edgeRoutersGained: number;
  edgeRoutersLost: number;
  postureChecksStarted: number;
  postureChecksStopped: number;
}

export interface WhatIfAnswer {
  summary: WhatIfSummary;
  /** Whether some entries were left out of the lists (`limit`); the counts are complete. */
  truncated: boolean;
  services: ServiceChange[];
}

export type WhatIfNames = Record<WhatIfNamed, Map<string, string>>;

/** The default of `limit`: entries listed in one answer. */
export const defaultWhatIfLimit = 1000;

/**
 * The answer to show: services by name, identities, routers and posture checks by name (then id),
 * with names (an id whose name is unknown shows the id), every count complete, and at most `limit`
 * entries listed in all — each service, each identity of a Dial or Bind list, each router a pair
 * gains or loses and each posture check entry counts one; a pair is listed with all its routers or
 * not at all. Listing stops at the first entry that does not fit (`truncated`).
 */
export function answerOf(diffs: ServiceDiff[], names: WhatIfNames, limit: number, changes: number): WhatIfAnswer {
  const named = (kind: WhatIfNamed, id: string): Named => ({ id, name: names[kind].get(id) ?? id });
  const order = (x: Named, y: Named) => byCodeUnits(x.name, y.name) || byCodeUnits(x.id, y.id);
  const summary: WhatIfSummary = {
    changes,
    services: diffs.length,
    dialGained: 0,
    dialLost: 0,
    bindGained: 0,
    bindLost: 0,
    edgeRouterPairs: 0,
    edgeRoutersGained: 0,
    edgeRoutersLost: 0,
    postureChecksStarted: 0,
    postureChecksStopped: 0,
  };
  let budget = limit;
  let truncated = false;
  /** Takes entries in order while each fits (its cost from `size`); the first that does not ends all listing. */
  const take = <T>(items: T[], size: (t: T) => number = () => 1): T[] => {
    const out: T[] = [];
    for (const item of items) {
      const cost = size(item);
      if (truncated || cost > budget) {
        truncated = true;
        break;
      }
      budget -= cost;
      out.push(item);
    }
    return out;
  };
  const identities = (g: Gains): IdentityChanges => ({
    gained: take(g.gained.map((id) => named('identities', id)).sort(order)),
    lost: take(g.lost.map((id) => named('identities', id)).sort(order)),
    gainedCount: g.gained.length,
    lostCount: g.lost.length,
  });
  const posture = (p: PostureEntry): PostureChange => ({
    postureCheck: named('postureChecks', p.postureCheckId),
    policy: named('servicePolicies', p.policyId),
    policyType: p.type,
  });
  const byPosture = (x: PostureChange, y: PostureChange) =>
    order(x.postureCheck, y.postureCheck) || order(x.policy, y.policy) || byCodeUnits(x.policyType, y.policyType);

  const sorted = diffs
    .map((d) => ({ d, service: named('services', d.serviceId) }))
    .sort((x, y) => order(x.service, y.service));
  const out: ServiceChange[] = [];
  for (const { d, service } of sorted) {
    summary.dialGained += d.dial.gained.length;
    summary.dialLost += d.dial.lost.length;
    summary.bindGained += d.bind.gained.length;
    summary.bindLost += d.bind.lost.length;
    summary.edgeRouterPairs += d.edgeRouters.length;
    for (const r of d.edgeRouters) {
      summary.edgeRoutersGained += r.gained.length;
      summary.edgeRoutersLost += r.lost.length;
    }
    summary.postureChecksStarted += d.postureChecks.started.length;
    summary.postureChecksStopped += d.postureChecks.stopped.length;
    if (take([service]).length === 0) continue;
    const pairs = d.edgeRouters
      .map((r) => ({
        identity: named('identities', r.identityId),
        gained: r.gained.map((id) => named('edgeRouters', id)).sort(order),
        lost: r.lost.map((id) => named('edgeRouters', id)).sort(order),
      }))
      .sort((x, y) => order(x.identity, y.identity));
    out.push({
      service,
      dial: identities(d.dial),
      bind: identities(d.bind),
      edgeRouters: { pairs: d.edgeRouters.length, identities: take(pairs, (p) => p.gained.length + p.lost.length) },
      postureChecks: {
        started: take(d.postureChecks.started.map(posture).sort(byPosture)),
        stopped: take(d.postureChecks.stopped.map(posture).sort(byPosture)),
        startedCount: d.postureChecks.started.length,
        stoppedCount: d.postureChecks.stopped.length,
      },
    });
  }
  return { summary, truncated, services: out };
}
