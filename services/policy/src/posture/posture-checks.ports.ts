import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ListInput, ListPage, RoleFilter } from '@ziti/platform/list-page';
import type { PolicyStores } from '../policies/policies.ports.ts';
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
}

export interface PostureCheckTypeStore {
  get(id: string): Promise<PostureCheckType | null>;
  list(input: ListInput): Promise<ListPage<PostureCheckType>>;
}

/** The policy stores of the transaction (a deleted check leaves the policies' roles) and the checks'. */
export interface PostureCheckStores extends PolicyStores {
  checks: PostureCheckStore;
  types: PostureCheckTypeStore;
}

export type PostureCheckUnitOfWork = <T>(fn: (stores: PostureCheckStores) => Promise<T>) => Promise<T>;
