import type { AccessDerivation } from '../access/access.domain.ts';
import type { EntityChange } from '../read-models/read-models.ports.ts';
import type { PolicyKind } from '../access/access.ports.ts';
import type { SystemEdgeRouterPolicies } from './system-edge-router-policies.domain.ts';
import type { PolicyChange, PolicyService } from './policies.domain.ts';
import type { PolicyStores } from './policies.ports.ts';
import { type RoleTarget, roleTargetOf } from './roles.domain.ts';

/** The owners' entities whose read models policy keeps and that policies select. */
export type OwnerEntity = Exclude<RoleTarget, 'postureChecks'>;

/**
 * What an owner's identity, service or edge router change does to policy, in the transaction that
 * applied it to the read model (read-model-events.transport.ts; only a newer position reaches here,
 * docs/adr/0008): its links and access are derived again (docs/adr/0009); a deletion takes its
 * `@id` out of every policy's roles of its type, as the reference's delete does (ziti
 * `controller/db/base_store.go` `deleteEntityReferences`); an edge router's system edge-router
 * policy follows it. Policy rows are written first and announced (relinked and their events
 * emitted, as any policy change: `PolicyService.announce`) after the entity's own derivation, so
 * row locks come before the derivation lock, in the order of every policy write.
 */
export class EntityChanges {
  constructor(
    private readonly access: AccessDerivation,
    private readonly policies: Record<PolicyKind, PolicyService>,
    private readonly systemPolicies: SystemEdgeRouterPolicies,
  ) {}

  async identityChanged(s: PolicyStores, id: string, deleted = false, change: EntityChange = {}): Promise<void> {
    const changes = deleted ? await this.dropReferences(s, 'identities', [id]) : [];
    await this.access.identityChanged(s.links, s.events, id, change);
    await this.announce(s, changes);
  }

  async serviceChanged(s: PolicyStores, id: string, deleted = false, change: EntityChange = {}): Promise<void> {
    const changes = deleted ? await this.dropReferences(s, 'services', [id]) : [];
    await this.access.serviceChanged(s.links, s.events, id, change);
    await this.announce(s, changes);
  }

  async edgeRouterChanged(s: PolicyStores, id: string, deleted = false): Promise<void> {
    const changes = await this.systemPolicies.reconcile(s, [id]);
    if (deleted) changes.push(...(await this.dropReferences(s, 'edgeRouters', [id])));
    await this.access.edgeRouterChanged(s.links, id);
    await this.announce(s, changes);
  }

  /**
   * A read model was rebuilt from its owner: what it no longer has is gone from the roles too (a
   * deletion missed in a gap), the system policies follow the routers again, and every link is
   * derived from scratch.
   */
  async rebuilt(s: PolicyStores, entity: OwnerEntity): Promise<void> {
    const changes = entity === 'edgeRouters' ? await this.systemPolicies.reconcile(s) : [];
    changes.push(...(await this.dropReferences(s, entity)));
    await this.access.rebuild(s.links, s.events);
    await this.announce(s, changes);
  }

  /**
   * Takes the `@id`s of gone entities of `target` (those of `ids` when given) out of every policy's
   * roles of that type; returns the policies changed, to announce.
   */
  async dropReferences(s: PolicyStores, target: RoleTarget, ids?: string[]): Promise<PolicyChange[]> {
    const changes: PolicyChange[] = [];
    for (const [kind, service] of Object.entries(this.policies) as [PolicyKind, PolicyService][]) {
      for (const field of service.spec.roleFields.filter((f) => roleTargetOf[f] === target)) {
        for (const policy of await service.spec.store(s).dropGoneRoles(field, ids))
          changes.push({ kind, what: 'updated', policy });
      }
    }
    return changes;
  }

  /** Announces policy changes written in `s`'s transaction, in order, as any policy change. */
  async announce(s: PolicyStores, changes: PolicyChange[]): Promise<void> {
    for (const c of changes) await this.policies[c.kind].announce(s, c.what, c.policy);
  }
}
