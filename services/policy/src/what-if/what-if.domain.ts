import { ApiError } from '@ziti/contracts';
import type { PolicyKind, Touched } from '../access/access.ports.ts';
import { type PostureCheckInput, roleAttributesOf } from '../posture/posture-checks.domain.ts';
import { applyOwnerState } from '../read-models/owner-state.domain.ts';
import type { PolicyInput } from '../policies/policies.domain.ts';
import {
  type UsableRoute,
  type WhatIfAnswer,
  type WhatIfFacts,
  type WhatIfNames,
  answerOf,
  diffFacts,
  namedIds,
} from './what-if-diff.domain.ts';
import type {
  AccessPair,
  PostureLink,
  ProposableEntity,
  RouterLink,
  WhatIfEngine,
  WhatIfNamed,
  WhatIfProbe,
  WhatIfSandbox,
} from './what-if.ports.ts';

export type PolicyEntityType = 'servicePolicies' | 'edgeRouterPolicies' | 'serviceEdgeRouterPolicies';
export type AttributeEntityType = 'identities' | 'services' | 'edgeRouters';
export type WhatIfEntityType = PolicyEntityType | 'postureChecks' | AttributeEntityType;

/**
 * One proposed change, its body decoded as the real operation's (the gateway's schema for it):
 * create, patch or delete of a policy or a posture check, or new role attributes for an identity,
 * a service or an edge router.
 */
export type ProposedChange =
  | { action: 'create'; entityType: PolicyEntityType; body: PolicyInput }
  | { action: 'patch'; entityType: PolicyEntityType; id: string; body: PolicyInput }
  | { action: 'create'; entityType: 'postureChecks'; body: PostureCheckInput }
  | { action: 'patch'; entityType: 'postureChecks'; id: string; body: PostureCheckInput }
  | { action: 'delete'; entityType: PolicyEntityType | 'postureChecks'; id: string }
  | { action: 'patch'; entityType: AttributeEntityType; id: string; roleAttributes: string[] | null | undefined };

export const policyKindOf: Record<PolicyEntityType, PolicyKind> = {
  servicePolicies: 'service',
  edgeRouterPolicies: 'edgeRouter',
  serviceEdgeRouterPolicies: 'serviceEdgeRouter',
};

/** The singular its owner names in a not-found cause (`identity with id X not found`). */
const singularOf: Record<AttributeEntityType, string> = {
  identities: 'identity',
  services: 'service',
  edgeRouters: 'edgeRouter',
};

/**
 * Rows of derived access a what-if reads in each state at most (access pairs, router links,
 * posture links): the policy engine compares a service policy edit pair by pair up to the same
 * number (`exactAccessPairLimit`), and past it neither does a what-if.
 */
export const whatIfRowLimit = 250_000;

/**
 * A field error of change `index` names the field in the request (`changes.<index>.body.<field>`,
 * or `changes.<index>.<part>`); other errors pass as they are (a not-found is the real operation's).
 */
export function atChange(err: unknown, index: number, part: 'body' | 'id' = 'body'): unknown {
  if (!(err instanceof ApiError) || typeof err.cause?.field !== 'string') return err;
  const { field, reason } = err.cause;
  const prefix = `changes.${index}.${part}`;
  const at = part === 'id' || field === '' ? prefix : `${prefix}.${field}`;
  const said = typeof reason === 'string' && reason.startsWith(field) ? `${at}${reason.slice(field.length)}` : reason;
  return new ApiError(
    err.code,
    { ...err.cause, field: at, ...(said === undefined ? {} : { reason: said }) },
    err.message,
  );
}

const tooWide = () =>
  ApiError.field(
    'changes',
    `the proposed changes span more than ${whatIfRowLimit} rows of derived access (identity/service pairs, ` +
      'router and posture links) in one state, too many to compare; split them or narrow their roles',
  );

/** Identity × service pairs (a side absent: every id on it). */
interface PairScope {
  identityIds?: string[];
  serviceIds?: string[];
}
/** Usable routes (a side absent: every id on it; at least one side is given). */
interface RouteScope extends PairScope {
  edgeRouterIds?: string[];
}

const none: Touched = { identities: [], services: [], edgeRouters: [], postureChecks: [] };
const union = (a: string[] = [], b: string[] = []) => [...new Set([...a, ...b])];

/**
 * Where the proposed changes can make a difference, from the links of what each change touched
 * right before and right after it (docs/adr/0011: access of a pair moves only with a link of its
 * identity or of its service). Across several changes, a difference between the first and the last
 * state is a difference of some step, so the union of the steps' scopes holds every one.
 */
class Scope {
  readonly access: PairScope[] = [];
  readonly routes: RouteScope[] = [];
  readonly posturePolicies = new Set<string>();
  readonly identities = new Set<string>();
  readonly services = new Set<string>();
  readonly edgeRouters = new Set<string>();

  /**
   * A policy's links before and after a change of it. A policy selecting more combinations (of its
   * identities and services, identities and routers, or services and routers) than a what-if reads
   * is refused at once: every one of them is a row of derived access in the state it was linked in.
   */
  policy(kind: PolicyKind, before: Touched, after: Touched, policyId: string): void {
    for (const links of [before, after]) {
      const sides: Record<PolicyKind, [string[], string[]]> = {
        service: [links.identities, links.services],
        edgeRouter: [links.identities, links.edgeRouters],
        serviceEdgeRouter: [links.services, links.edgeRouters],
      };
      const [a, b] = sides[kind];
      if (a.length * b.length > whatIfRowLimit) throw tooWide();
    }
    const identityIds = union(before.identities, after.identities);
    const serviceIds = union(before.services, after.services);
    const edgeRouterIds = union(before.edgeRouters, after.edgeRouters);
    if (kind === 'service') {
      // Its identities × its services: their access, and so the routes of those pairs.
      if (identityIds.length > 0 && serviceIds.length > 0) {
        this.access.push({ identityIds, serviceIds });
        this.routes.push({ identityIds, serviceIds });
      }
      this.posturePolicies.add(policyId);
    } else if (kind === 'edgeRouter') {
      if (identityIds.length > 0 && edgeRouterIds.length > 0) this.routes.push({ identityIds, edgeRouterIds });
    } else if (serviceIds.length > 0 && edgeRouterIds.length > 0) this.routes.push({ serviceIds, edgeRouterIds });
  }

  /** The service policies that linked a posture check before and after a change of it. */
  postureCheck(before: string[], after: string[]): void {
    for (const id of union(before, after)) this.posturePolicies.add(id);
  }

  entity(type: AttributeEntityType, id: string): void {
    this[type].add(id);
  }

  /** The scopes to read in both states. */
  reads(): { access: PairScope[]; routes: RouteScope[]; posture: { policyIds?: string[]; serviceIds?: string[] }[] } {
    const identityIds = [...this.identities];
    const serviceIds = [...this.services];
    const edgeRouterIds = [...this.edgeRouters];
    const access = [...this.access];
    const routes = [...this.routes];
    const posture: { policyIds?: string[]; serviceIds?: string[] }[] = [];
    // An identity's own links move: its access to any service, and so its routes; likewise a service's.
    if (identityIds.length > 0) {
      access.push({ identityIds });
      routes.push({ identityIds });
    }
    if (serviceIds.length > 0) {
      access.push({ serviceIds });
      routes.push({ serviceIds });
      posture.push({ serviceIds });
    }
    // A router's links move: whether it is usable by any pair.
    if (edgeRouterIds.length > 0) routes.push({ edgeRouterIds });
    if (this.posturePolicies.size > 0) posture.push({ policyIds: [...this.posturePolicies] });
    return { access, routes, posture };
  }
}

/** Reads one state's facts over a scope, at most `whatIfRowLimit` rows. */
class FactReader {
  private left = whatIfRowLimit;
  private readonly pairs = new Map<string, Promise<AccessPair[]>>();

  constructor(private readonly probe: WhatIfProbe) {}

  private async counted<T>(rows: Promise<T[]>): Promise<T[]> {
    const got = await rows;
    this.left -= got.length;
    if (this.left < 0) throw tooWide();
    return got;
  }

  /** Access pairs of a scope (each scope read once per state). */
  private accessPairs(of: PairScope): Promise<AccessPair[]> {
    const key = JSON.stringify([of.identityIds ?? null, of.serviceIds ?? null]);
    let rows = this.pairs.get(key);
    if (!rows) this.pairs.set(key, (rows = this.counted(this.probe.accessPairs(of, this.left + 1))));
    return rows;
  }

  private identityRouters(of: { identityIds?: string[]; edgeRouterIds?: string[] }) {
    return this.counted(this.probe.identityRouters(of, this.left + 1));
  }

  private serviceRouters(of: { serviceIds?: string[]; edgeRouterIds?: string[] }) {
    return this.counted(this.probe.serviceRouters(of, this.left + 1));
  }

  /** The usable routes of a scope: pairs with access, through routers both sides may use. */
  private async routes(of: RouteScope): Promise<UsableRoute[]> {
    let pairs: AccessPair[];
    let identityRouters: RouterLink[];
    let serviceRouters: RouterLink[];
    const ids = (xs: { id: string }[]) => [...new Set(xs.map((x) => x.id))];
    if (of.edgeRouterIds) {
      identityRouters = await this.identityRouters({ identityIds: of.identityIds, edgeRouterIds: of.edgeRouterIds });
      serviceRouters = await this.serviceRouters({ serviceIds: of.serviceIds, edgeRouterIds: of.edgeRouterIds });
      const identityIds = ids(identityRouters);
      const serviceIds = ids(serviceRouters);
      if (identityIds.length === 0 || serviceIds.length === 0) return [];
      pairs = await this.accessPairs({ identityIds, serviceIds });
    } else {
      pairs = await this.accessPairs(of);
      if (pairs.length === 0) return [];
      identityRouters = await this.identityRouters({ identityIds: [...new Set(pairs.map((p) => p.identityId))] });
      serviceRouters = await this.serviceRouters({ serviceIds: [...new Set(pairs.map((p) => p.serviceId))] });
    }
    const routersOf = (links: RouterLink[]) => {
      const out = new Map<string, Set<string>>();
      for (const l of links) {
        let set = out.get(l.id);
        if (!set) out.set(l.id, (set = new Set()));
        set.add(l.edgeRouterId);
      }
      return out;
    };
    const byIdentity = routersOf(identityRouters);
    const byService = routersOf(serviceRouters);
    const out: UsableRoute[] = [];
    for (const p of pairs) {
      const mine = byIdentity.get(p.identityId);
      const its = byService.get(p.serviceId);
      if (!mine || !its) continue;
      const [small, large] = mine.size <= its.size ? [mine, its] : [its, mine];
      for (const edgeRouterId of small)
        if (large.has(edgeRouterId)) out.push({ identityId: p.identityId, serviceId: p.serviceId, edgeRouterId });
    }
    return out;
  }

  async facts(scope: ReturnType<Scope['reads']>): Promise<WhatIfFacts> {
    const access: AccessPair[][] = [];
    for (const s of scope.access) access.push(await this.accessPairs(s));
    const routes: UsableRoute[][] = [];
    for (const s of scope.routes) routes.push(await this.routes(s));
    const posture: PostureLink[][] = [];
    for (const s of scope.posture) posture.push(await this.counted(this.probe.postureLinks(s, this.left + 1)));
    return { access: access.flat(), routes: routes.flat(), posture: posture.flat() };
  }
}

/**
 * What-if analysis of policy changes (issue 24): the proposed changes are made in order by the real
 * domain services — the same create, patch and delete of policies and posture checks, the same
 * update of a read model an owner's event makes — in a sandbox transaction that is always rolled
 * back. The derived access is read over the changes' scope after them, the sandbox is rewound to
 * the state before them and the same scope read again; the answer is the difference.
 */
export class WhatIfAnalysis {
  constructor(private readonly sandbox: WhatIfSandbox) {}

  analyse(changes: ProposedChange[], limit: number): Promise<WhatIfAnswer> {
    return this.sandbox(async (engine) => {
      const scope = new Scope();
      for (const [index, change] of changes.entries()) {
        try {
          await this.apply(engine, scope, change);
        } catch (err) {
          throw atChange(err, index);
        }
      }
      const reads = scope.reads();
      const after = await new FactReader(engine.probe).facts(reads);
      const afterNames = await this.policyNames(engine.probe, after);
      await engine.rewind();
      const before = await new FactReader(engine.probe).facts(reads);
      const beforeNames = await this.policyNames(engine.probe, before);
      const diffs = diffFacts(before, after);
      // Identities, services and routers exist before (a what-if changes their attributes only);
      // policies and posture checks may be created (named after) or deleted (named before).
      const ids = namedIds(diffs);
      const names: WhatIfNames = {
        identities: await engine.probe.names('identities', ids.identities),
        services: await engine.probe.names('services', ids.services),
        edgeRouters: await engine.probe.names('edgeRouters', ids.edgeRouters),
        postureChecks: new Map([...beforeNames.postureChecks, ...afterNames.postureChecks]),
        servicePolicies: new Map([...beforeNames.servicePolicies, ...afterNames.servicePolicies]),
      };
      return answerOf(diffs, names, limit, changes.length);
    });
  }

  /** Names of the service policies and posture checks of a state's posture links. */
  private async policyNames(probe: WhatIfProbe, facts: WhatIfFacts) {
    const of = async (kind: WhatIfNamed, ids: string[]) => (ids.length === 0 ? new Map() : probe.names(kind, ids));
    return {
      servicePolicies: await of('servicePolicies', [...new Set(facts.posture.map((p) => p.policyId))]),
      postureChecks: await of('postureChecks', [...new Set(facts.posture.map((p) => p.postureCheckId))]),
    };
  }

  private async apply(engine: WhatIfEngine, scope: Scope, change: ProposedChange): Promise<void> {
    const probe = engine.probe;
    switch (change.entityType) {
      case 'servicePolicies':
      case 'edgeRouterPolicies':
      case 'serviceEdgeRouterPolicies': {
        const kind = policyKindOf[change.entityType];
        const policies = engine.policies[kind];
        if (change.action === 'create') {
          const created = await policies.create(change.body as PolicyInput);
          scope.policy(kind, none, await probe.policyLinks(kind, created.id), created.id);
          return;
        }
        const before = await probe.policyLinks(kind, change.id);
        if (change.action === 'patch') await policies.update(change.id, change.body as PolicyInput, 'patch');
        else await policies.delete(change.id);
        scope.policy(kind, before, await probe.policyLinks(kind, change.id), change.id);
        return;
      }
      case 'postureChecks': {
        if (change.action === 'create') {
          const created = await engine.postureChecks.create(change.body as PostureCheckInput);
          scope.postureCheck([], await probe.postureCheckPolicies(created.id));
          return;
        }
        const before = await probe.postureCheckPolicies(change.id);
        if (change.action === 'patch')
          await engine.postureChecks.update(change.id, change.body as PostureCheckInput, 'patch');
        else await engine.postureChecks.delete(change.id);
        scope.postureCheck(before, await probe.postureCheckPolicies(change.id));
        return;
      }
      case 'identities':
      case 'services':
      case 'edgeRouters': {
        const entity = engine[change.entityType] as ProposableEntity<{ id: string; roleAttributes: string[] }>;
        const current = await entity.model.current(change.id);
        if (!current) throw ApiError.notFound(singularOf[change.entityType], change.id);
        const roleAttributes = roleAttributesOf(change.roleAttributes);
        // As if its owner announced the new state: one position past the stored one.
        await applyOwnerState(
          entity.model,
          { ...current.state, roleAttributes },
          current.position + 1,
          false,
          entity.changed,
        );
        scope.entity(change.entityType, change.id);
        return;
      }
    }
  }
}
