import type { LockOption } from '@ziti/platform/db/row-lock';
import type { EventSink } from '@ziti/platform/event-sink';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { AccessLinks } from '../access/access.ports.ts';
import type { SystemEdgeRouterPolicyStore } from './system-edge-router-policies.ports.ts';
import type { Policy } from './policies.domain.ts';
import type { RoleField } from './roles.domain.ts';
import type { RoleTargets } from './roles.ports.ts';

/** One policy kind's table (each kind's `<kind>.store.ts` binds the Postgres one). */
export interface PolicyStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<Policy | null>;
  insert(policy: Policy): Promise<void>;
  update(policy: Policy): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput): Promise<ListPage<Policy>>;
  /**
   * Drops from `field` of every policy the `@id` entries whose entity is gone (a tombstone, or no
   * row, in the field's target table), only those of `ids` when given, keeping the order. System
   * policies keep theirs (the controller keeps them with their router). Returns the policies it
   * changed as they are now, by id; `updatedAt` is kept, as the reference's delete keeps it.
   */
  dropGoneRoles(field: RoleField, ids?: string[]): Promise<Policy[]>;
}

/** The stores of one policy transaction. */
export interface PolicyStores {
  servicePolicies: PolicyStore;
  edgeRouterPolicies: PolicyStore;
  serviceEdgeRouterPolicies: PolicyStore;
  systemEdgeRouterPolicies: SystemEdgeRouterPolicyStore;
  targets: RoleTargets;
  links: AccessLinks;
  events: EventSink;
}

export type PolicyUnitOfWork = <T>(fn: (stores: PolicyStores) => Promise<T>) => Promise<T>;
