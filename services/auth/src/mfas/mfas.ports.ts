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
