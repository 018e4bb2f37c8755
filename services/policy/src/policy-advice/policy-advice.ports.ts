import type { IdentityState, ServiceState } from '@ziti/contracts';
import type { Reachability } from './policy-advice.domain.ts';

/** What the policy advice reads of the derived access tables and the read models. */
export interface AdviceStore {
  /** A live identity (tombstones do not count). */
  identity(id: string): Promise<IdentityState | undefined>;
  /** A live service. */
  service(id: string): Promise<ServiceState | undefined>;
  /** The access of the pair in one read (one snapshot of the derived tables). */
  reachability(identityId: string, serviceId: string): Promise<Reachability>;
}

export type AdviceReader = <T>(fn: (store: AdviceStore) => Promise<T>) => Promise<T>;
