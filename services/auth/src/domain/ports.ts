import type { ApiSessionStore, LiveApiSession } from '@ziti/platform/sessions/api-session-store';
import type { EventSink } from '@ziti/platform/event-sink';
import type { LockOption } from '@ziti/platform/db/row-lock';
import type { AuthPolicy } from './auth-policy.ts';
import type { ExternalJwtSigner } from './ext-jwt-signer.ts';
import type { Authenticator, Identity, IdentityView, ListInput, ListPage, NamedEntity, RoleFilter } from './model.ts';

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
  /** An identity with what its detail shows, in one read. */
  getView(id: string): Promise<IdentityView | null>;
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

export interface AuthenticatorStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<Authenticator | null>;
  insert(authenticator: Authenticator): Promise<void>;
  update(authenticator: Authenticator): Promise<void>;
  delete(id: string): Promise<boolean>;
  listByIdentity(identityId: string): Promise<Authenticator[]>;
  findByUsername(username: string): Promise<Authenticator | null>;
  /**
   * What a password login reads, in one statement: the updb authenticator of `username`, its
   * identity, the identity's auth policy (`fallbackPolicyId`'s when there is no identity, so an
   * unknown username costs what a known one does) and whether the identity has a verified MFA.
   */
  findPasswordLogin(username: string, fallbackPolicyId: string): Promise<PasswordLoginRead>;
  findByFingerprint(fingerprint: string): Promise<Authenticator | null>;
  /** Lists with ZitiQL; `identityId` narrows to one identity's authenticators. */
  list(input: ListInput, identityId?: string): Promise<ListPage<Authenticator>>;
}

export interface PasswordLoginRead {
  authenticator: Authenticator | null;
  identity: Identity | null;
  policy: AuthPolicy | null;
  mfaVerified: boolean;
}

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

export interface ExternalJwtSignerStore {
  /** `forUpdate`: as for authenticators. */
  get(id: string, options?: LockOption): Promise<ExternalJwtSigner | null>;
  findByIssuer(issuer: string): Promise<ExternalJwtSigner | null>;
  insert(signer: ExternalJwtSigner): Promise<void>;
  update(signer: ExternalJwtSigner): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** `onlyWithAuthUrl`: the client API's anonymous listing (enabled signers with an externalAuthUrl). */
  list(input: ListInput, onlyWithAuthUrl?: boolean): Promise<ListPage<ExternalJwtSigner>>;
}

/** An MFA record as stored: the TOTP secret and the recovery codes sealed (SecretBox tokens). */
export interface StoredMfa {
  id: string;
  identityId: string;
  isVerified: boolean;
  sealedSecret: string;
  sealedRecoveryCodes: string;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export interface MfaStore {
  /** `forUpdate` locks the row until the transaction ends (single-use recovery codes). */
  getByIdentity(identityId: string, forUpdate?: boolean): Promise<StoredMfa | null>;
  insert(mfa: StoredMfa): Promise<void>;
  update(mfa: StoredMfa): Promise<void>;
  deleteByIdentity(identityId: string): Promise<boolean>;
  /** Which of these identities have a verified MFA. */
  verifiedAmong(identityIds: string[]): Promise<Set<string>>;
}

/** Consecutive failed password attempts per updb authenticator. */
export interface LoginAttemptStore {
  /** Counts one more failure and answers the count. */
  recordFailure(authenticatorId: string, at: Date): Promise<number>;
  reset(authenticatorId: string): Promise<void>;
}

export interface IdentityTrace {
  identityId: string;
  enabled: boolean;
  traceId: string | null;
  until: Date | null;
  channels: string[];
  updatedAt: Date;
}

export interface IdentityTraceStore {
  get(identityId: string): Promise<IdentityTrace | null>;
  put(trace: IdentityTrace): Promise<void>;
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
  extJwtSigners: ExternalJwtSignerStore;
  mfa: MfaStore;
  loginAttempts: LoginAttemptStore;
  traces: IdentityTraceStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: AuthStores) => Promise<T>) => Promise<T>;

export interface PasswordHasher {
  hash(password: string): Promise<{ hash: string; salt: string }>;
  verify(password: string, hash: string, salt: string): Promise<boolean>;
}

export type SessionStore = ApiSessionStore;

/** Filters API sessions (which live in Redis) with ZitiQL. */
export interface ApiSessionQuery {
  list(sessions: LiveApiSession[], input: ListInput): Promise<ListPage<LiveApiSession>>;
}
