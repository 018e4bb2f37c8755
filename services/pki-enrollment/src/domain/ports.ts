import type {
  CreateAuthenticatorRequest,
  CreateIdentityRequest,
  CredentialAuthenticator,
  IdentitySummary,
} from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type { LockOption } from '@ziti/platform/db/row-lock';
import type { Ca, Enrollment, ListInput, ListPage, SessionCertificate } from './model.ts';

/** A certificate (chain) with its private key encrypted at rest. */
export interface StoredMaterial {
  name: 'root' | 'signer' | 'server';
  certPem: string;
  /** SecretBox token of the PKCS#8 key; null when the key is not kept here (operator-supplied root). */
  keyEncrypted: string | null;
}

export interface PkiMaterialStore {
  load(name: StoredMaterial['name']): Promise<StoredMaterial | null>;
  /** Inserts unless present and returns what is stored afterwards: the winner when replicas race. */
  insertIfAbsent(material: StoredMaterial): Promise<StoredMaterial>;
  /** Replaces the material only if it still has `previousCertPem`; returns what is stored afterwards. */
  replace(material: StoredMaterial, previousCertPem: string): Promise<StoredMaterial>;
}

export interface CaStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<Ca | null>;
  /** Every CA (there are few); chain checks look at all of them. */
  all(): Promise<Ca[]>;
  list(input: ListInput): Promise<ListPage<Ca>>;
  insert(ca: Ca): Promise<void>;
  update(ca: Ca): Promise<void>;
  delete(id: string): Promise<boolean>;
  names(ids: string[]): Promise<Map<string, string>>;
}

export interface EnrollmentStore {
  /** `forUpdate`: as for CAs. */
  get(id: string, options?: LockOption): Promise<Enrollment | null>;
  /** The enrollment of a token. */
  findByToken(token: string): Promise<Enrollment | null>;
  /**
   * Claims the enrollment for one use until `until`: true unless it is gone, its token changed or
   * a live claim holds it (one use at a time, without a transaction held while it is used).
   */
  claim(id: string, token: string, until: Date, now: Date): Promise<boolean>;
  /** Ends a claim: the enrollment can be used again. */
  release(id: string): Promise<void>;
  /**
   * Deletes the router's enrollments unless one is claimed (being used) at `now`; false when a
   * claimed one stays.
   */
  clearRouter(routerId: string, now: Date): Promise<boolean>;
  list(input: ListInput, identityId?: string): Promise<ListPage<Enrollment>>;
  listByIdentities(identityIds: string[]): Promise<Enrollment[]>;
  insert(enrollment: Enrollment): Promise<void>;
  update(enrollment: Enrollment): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Deletes an identity's enrollments (all, or only `ids`); returns the ids deleted. */
  deleteByIdentity(identityId: string, ids?: string[]): Promise<string[]>;
  /** Deletes the ottca enrollments of a CA (announcing each); their ids. */
  deleteByCa(caId: string): Promise<string[]>;
}

export interface SessionCertificateStore {
  get(id: string, apiSessionId: string): Promise<SessionCertificate | null>;
  list(input: ListInput, apiSessionId: string): Promise<ListPage<SessionCertificate>>;
  countBySession(apiSessionId: string): Promise<number>;
  insert(certificate: SessionCertificate): Promise<void>;
  delete(id: string, apiSessionId: string): Promise<boolean>;
  deleteBySession(apiSessionId: string): Promise<number>;
  deleteByIdentity(identityId: string): Promise<number>;
  deleteExpired(now: Date): Promise<number>;
}

/** The stores of one transaction and the events that leave with it. */
export interface PkiStores {
  cas: CaStore;
  enrollments: EnrollmentStore;
  sessionCertificates: SessionCertificateStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: PkiStores) => Promise<T>) => Promise<T>;

/**
 * What pki-enrollment needs from auth, which owns identities and authenticators. Calls go over the
 * bus and keep their error codes (CERT_IN_USE, MAX_AUTHENTICATOR_METHODS_REACHED, NOT_FOUND, …).
 */
export interface CredentialPort {
  createAuthenticator(input: CreateAuthenticatorRequest): Promise<{ id: string }>;
  /** NOT_FOUND when it does not exist. */
  getAuthenticator(id: string): Promise<CredentialAuthenticator>;
  stageCertificate(input: { authenticatorId: string; identityId: string; certPem: string }): Promise<void>;
  replaceCertificate(input: { authenticatorId: string; identityId: string; fingerprint: string }): Promise<void>;
  deleteAuthenticator(id: string): Promise<void>;
  identities(ids: string[]): Promise<Map<string, IdentitySummary>>;
  createIdentity(input: CreateIdentityRequest): Promise<{ id: string; name: string }>;
}
