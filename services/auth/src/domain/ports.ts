import type { ApiSessionStore } from '@ziti/platform';
import type { EventSink } from '@ziti/platform';
import type { AuthPolicySummary, Authenticator, Identity, ListInput, ListPage, NamedEntity, RoleFilter } from './model.ts';

export interface IdentityStore {
  get(id: string): Promise<Identity | null>;
  insert(identity: Identity): Promise<void>;
  update(identity: Identity): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Identity>>;
  findDefaultAdmin(): Promise<Identity | null>;
  findByName(name: string): Promise<Identity | null>;
}

export interface AuthenticatorStore {
  get(id: string): Promise<Authenticator | null>;
  insert(authenticator: Authenticator): Promise<void>;
  update(authenticator: Authenticator): Promise<void>;
  delete(id: string): Promise<boolean>;
  listByIdentity(identityId: string): Promise<Authenticator[]>;
  findByUsername(username: string): Promise<Authenticator | null>;
  /** Lists with ZitiQL; `identityId` narrows to one identity's authenticators. */
  list(input: ListInput, identityId?: string): Promise<ListPage<Authenticator>>;
}

export interface AuthPolicyStore {
  get(id: string): Promise<AuthPolicySummary | null>;
  insertIfAbsent(policy: AuthPolicySummary & { isSystem: boolean; secondary: unknown }): Promise<void>;
}

export interface IdentityTypeStore {
  get(id: string): Promise<NamedEntity | null>;
  list(input: ListInput): Promise<ListPage<NamedEntity>>;
  insertIfAbsent(type: NamedEntity): Promise<void>;
}

/** The stores of one transaction and the events that leave with it. */
export interface AuthStores {
  identities: IdentityStore;
  authenticators: AuthenticatorStore;
  authPolicies: AuthPolicyStore;
  identityTypes: IdentityTypeStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: AuthStores) => Promise<T>) => Promise<T>;

export interface PasswordHasher {
  hash(password: string): Promise<{ hash: string; salt: string }>;
  verify(password: string, hash: string, salt: string): Promise<boolean>;
  /** Spends the same effort as a verification, so unknown users cost what known ones do. */
  burn(password: string): Promise<void>;
}

export type SessionStore = ApiSessionStore;

/** Filters API sessions (which live in Redis) with ZitiQL. */
export interface ApiSessionQuery {
  list(sessions: import('@ziti/platform').LiveApiSession[], input: ListInput): Promise<ListPage<import('@ziti/platform').LiveApiSession>>;
}
