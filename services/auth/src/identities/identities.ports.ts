import type { LockOption } from '@ziti/platform/db/row-lock';
import type { Identity, IdentityView, ListInput, ListPage, RoleFilter } from '../shared/model.domain.ts';

export interface IdentityStore {
  /**
   * `forUpdate` locks the row until the transaction ends: every read-modify-write of an identity
   * takes it, so two concurrent changes of different fields both survive.
   */
  get(id: string, options?: LockOption): Promise<Identity | null>;
  /** Refuses a taken name or external id, and an auth policy that does not exist (`unknownAuthPolicy`). */
  insert(identity: Identity): Promise<void>;
  update(identity: Identity): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Those of `ids` that exist, in no particular order. */
  getMany(ids: string[]): Promise<Identity[]>;
  list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Identity>>;
  /**
   * One page of the identities auth publishes (docs/adr/0008), in bytewise id order: those of `ids`,
   * or at most `limit` after `after` (from the first when undefined).
   */
  page(after: string | undefined, limit: number, ids?: string[]): Promise<Identity[]>;
  /** An identity with what its detail shows, in one read. */
  getView(id: string): Promise<IdentityView | null>;
  /** Those of `ids` that exist, each with what its detail shows, in one read, in no particular order. */
  getViews(ids: string[]): Promise<IdentityView[]>;
  /** A page of identities with what their details show, and the total, in one read. */
  listViews(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<IdentityView>>;
  findDefaultAdmin(): Promise<Identity | null>;
  findByName(name: string): Promise<Identity | null>;
  findByExternalId(externalId: string): Promise<Identity | null>;
  /** Ids of the identities using an auth policy (at most `limit`). */
  idsByAuthPolicy(authPolicyId: string, limit?: number): Promise<string[]>;
  /**
   * Records the end of up to `limit` timed disables whose `disabledUntil` is not after `now`
   * (`disabled` becomes false), skipping rows other transactions hold; answers them as changed.
   */
  endLapsedDisables(now: Date, limit: number): Promise<Identity[]>;
}

/** inventory's word on which services exist: an identity keeps hosting costs and precedences only for those. */
export interface ServiceExistencePort {
  /** The ids asked about that name a service. */
  existing(ids: string[]): Promise<string[]>;
}
