import type { LockOption } from '@ziti/platform/db/row-lock';
import type { EventSink } from '@ziti/platform/event-sink';
import type { ListInput, ListPage, RoleFilter } from '@ziti/platform/list-page';
import type { AccessLinks } from '../access/access.ports.ts';
import type { PolicyStore } from '../shared/policies.ports.ts';
import type { PostureCheck, PostureCheckType } from './posture-checks.domain.ts';

export interface PostureCheckStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<PostureCheck | null>;
  insert(check: PostureCheck): Promise<void>;
  update(check: PostureCheck): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<PostureCheck>>;
  /** Distinct role attributes of the checks; only limit/skip inside the filter page them. */
  roleAttributes(input: ListInput): Promise<ListPage<string>>;
  /** Removes `@id` from every service policy's postureCheckRoles; returns the ids of the policies changed. */
  removeFromPolicyRoles(id: string, at: Date): Promise<string[]>;
}

export interface PostureCheckTypeStore {
  get(id: string): Promise<PostureCheckType | null>;
  list(input: ListInput): Promise<ListPage<PostureCheckType>>;
}

export interface PostureCheckStores {
  checks: PostureCheckStore;
  types: PostureCheckTypeStore;
  servicePolicies: PolicyStore;
  links: AccessLinks;
  events: EventSink;
}

export type PostureCheckUnitOfWork = <T>(fn: (stores: PostureCheckStores) => Promise<T>) => Promise<T>;
