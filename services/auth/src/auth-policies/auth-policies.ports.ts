import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { AuthPolicy } from './auth-policy.domain.ts';

export interface AuthPolicyStore {
  /** `forUpdate`: as for authenticators. */
  get(id: string, options?: LockOption): Promise<AuthPolicy | null>;
  insertIfAbsent(policy: AuthPolicy): Promise<void>;
  insert(policy: AuthPolicy): Promise<void>;
  update(policy: AuthPolicy): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput): Promise<ListPage<AuthPolicy>>;
  /** Ids of the policies that name a signer (allowed or required). */
  idsReferencingSigner(signerId: string): Promise<string[]>;
}
