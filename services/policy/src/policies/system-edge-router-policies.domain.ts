import type { Policy, PolicyChange } from './policies.domain.ts';
import type { PolicyStores } from './policies.ports.ts';

/** The name of a router's system edge-router policy (ziti `getSystemEdgeRouterPolicyName`). */
export const systemEdgeRouterPolicyName = (routerId: string) => `edge-router-${routerId}-system`;

/**
 * The system edge-router policy of a tunneler-enabled edge router, as the reference makes it
 * (ziti `controller/db/edge_router_store.go`, `routerIdentityConstraint`): the router's id, AnyOf,
 * its Router identity (auth makes it with the router's id) and the router itself. `at` is when the
 * router's state enabled it.
 */
export function systemEdgeRouterPolicy(routerId: string, at: Date): Policy {
  return {
    id: routerId,
    name: systemEdgeRouterPolicyName(routerId),
    semantic: 'AnyOf',
    type: null,
    isSystem: true,
    roles: { identityRoles: [`@${routerId}`], edgeRouterRoles: [`@${routerId}`] },
    tags: {},
    createdAt: at,
    updatedAt: at,
  };
}

const sameContent = (a: Policy, b: Policy) =>
  a.name === b.name && a.semantic === b.semantic && JSON.stringify(a.roles) === JSON.stringify(b.roles);

/**
 * Keeps the system edge-router policies in line with policy's read model of inventory's routers:
 * one exactly while its router is live with tunneling enabled. It is a function of the routers'
 * rows, which apply only newer positions (docs/adr/0008), so applying an event twice, late or out of
 * order leaves the same policies; the rename of a router changes nothing (the reference's neither).
 * Writes rows only: the caller announces the changes it returns (`PolicyService.announce`) after its
 * own derivation, in the same transaction.
 */
export class SystemEdgeRouterPolicies {
  constructor(private readonly now: () => Date = () => new Date()) {}

  /** The system policies of `routerIds` (all when absent) made, repaired or removed as their routers are now. */
  async reconcile(s: PolicyStores, routerIds?: string[]): Promise<PolicyChange[]> {
    const store = s.edgeRouterPolicies;
    const routers = await s.systemEdgeRouterPolicies.tunnelerRouters(routerIds);
    const wanted = new Map(routers.map((r) => [r.id, r.updatedAt]));
    const existing = new Set(await s.systemEdgeRouterPolicies.systemPolicyIds(routerIds));
    const changes: PolicyChange[] = [];
    for (const id of existing) {
      if (wanted.has(id)) continue;
      const current = await store.get(id, { forUpdate: true });
      if (!current || !(await store.delete(id))) continue;
      changes.push({ kind: 'edgeRouter', what: 'deleted', policy: { ...current, updatedAt: this.now() } });
    }
    for (const [id, at] of wanted) {
      if (existing.has(id)) {
        const current = await store.get(id, { forUpdate: true });
        if (!current) continue;
        const want = systemEdgeRouterPolicy(id, current.createdAt);
        if (sameContent(current, want)) continue;
        const repaired: Policy = { ...current, ...want, tags: current.tags, updatedAt: this.now() };
        await store.update(repaired);
        changes.push({ kind: 'edgeRouter', what: 'updated', policy: repaired });
        continue;
      }
      // Its name held by another policy (one an administrator named so while the router was not
      // tunneling) refuses the router's change in the reference; inventory's change is made here,
      // so the router goes without one until that policy is renamed or gone and the router changes.
      if (await s.systemEdgeRouterPolicies.policyNamed(systemEdgeRouterPolicyName(id))) continue;
      if (await store.get(id)) continue;
      const policy = systemEdgeRouterPolicy(id, at);
      await store.insert(policy);
      changes.push({ kind: 'edgeRouter', what: 'created', policy });
    }
    return changes;
  }
}
