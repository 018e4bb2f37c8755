import type { LockOption } from '@ziti/platform/db/row-lock';
import type { AuthPolicy } from '../auth-policies/auth-policy.domain.ts';
import type { Authenticator, Identity, ListInput, ListPage } from '../shared/model.domain.ts';

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
  /** Consecutive failed attempts counted against the authenticator (0: none recorded). */
  failedAttempts: number;
}
