import type { AuthQuery } from '@ziti/contracts';

/**
 * API sessions live outside any service database so the gateway can check a token in one round
 * trip (DESIGN §4). The record is written by auth and read by the gateway on every request; the
 * expiry slides on each use. Last activity is derived from the remaining time to live, so the
 * request path never writes more than the expiry itself.
 */
export interface ApiSessionRecord {
  id: string;
  token: string;
  identityId: string;
  identityName: string;
  isAdmin: boolean;
  authenticatorId: string;
  authMethod: string;
  ipAddress: string;
  configTypes: string[];
  isMfaRequired: boolean;
  isMfaComplete: boolean;
  /**
   * The identity's auth policy demands TOTP (`secondary.requireTotp`), so MFA is pending until
   * completed even without an enrolled MFA. Auth keeps it in step with the policy.
   */
  requireTotp?: boolean;
  /**
   * The auth policy's `secondary.requireExtJwtSigner`: every request must carry a valid JWT of
   * that signer in `Authorization: Bearer`, or the session is partially authenticated for it.
   */
  requiredExtJwtSigner?: RequiredExtJwtSigner | null;
  tags: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface RequiredExtJwtSigner {
  id: string;
  externalAuthUrl: string | null;
}

export interface LiveApiSession extends ApiSessionRecord {
  /** When the session was last used (derived from its sliding expiry). */
  lastActivityAt: string;
  expiresAt: string;
}

export interface ApiSessionStore {
  create(record: ApiSessionRecord, ttlSeconds: number): Promise<void>;
  /** Finds a session by token and slides its expiry; null when unknown or expired. */
  touch(token: string, ttlSeconds: number): Promise<LiveApiSession | null>;
  getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null>;
  update(id: string, patch: Partial<Omit<ApiSessionRecord, 'id' | 'token'>>, ttlSeconds: number): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Ends every session of an identity; returns the ids that were deleted. */
  deleteByIdentity(identityId: string): Promise<string[]>;
  listIdsByIdentity(identityId: string): Promise<string[]>;
  listAll(ttlSeconds: number): Promise<LiveApiSession[]>;
  close(): Promise<void>;
}

export function liveSession(
  record: ApiSessionRecord,
  remainingMs: number,
  ttlSeconds: number,
  now = Date.now(),
): LiveApiSession {
  const lastActivity = now - (ttlSeconds * 1000 - Math.max(0, remainingMs));
  const last = Math.max(lastActivity, Date.parse(record.createdAt) || lastActivity);
  return {
    ...record,
    lastActivityAt: new Date(last).toISOString(),
    expiresAt: new Date(last + ttlSeconds * 1000).toISOString(),
  };
}

/** The MFA auth query as the reference words it (ZITI-FACTS §9.3). */
export const mfaAuthQuery: AuthQuery = {
  typeId: 'MFA',
  provider: 'ziti',
  httpMethod: 'POST',
  httpUrl: './authenticate/mfa',
  format: 'alphaNumeric',
  minLength: 4,
  maxLength: 6,
};

/** The EXT-JWT auth query of a session that must present a JWT of `signer` (ZITI-FACTS §9.3). */
export function extJwtAuthQuery(signer: RequiredExtJwtSigner): AuthQuery {
  return {
    typeId: 'EXT-JWT',
    provider: 'url',
    id: signer.id,
    ...(signer.externalAuthUrl ? { httpUrl: signer.externalAuthUrl } : {}),
  };
}

/**
 * The secondary factors still pending for a session; any makes it partially authenticated.
 * MFA is pending when `(isMfaRequired OR requireTotp) AND NOT isMfaComplete`; EXT-JWT when the
 * policy names a signer and this request did not carry a valid JWT of it.
 */
export function pendingAuthQueries(session: ApiSessionRecord, extJwtSatisfied: boolean): AuthQuery[] {
  const queries: AuthQuery[] = [];
  if ((session.isMfaRequired || session.requireTotp === true) && !session.isMfaComplete) queries.push(mfaAuthQuery);
  if (session.requiredExtJwtSigner && !extJwtSatisfied) queries.push(extJwtAuthQuery(session.requiredExtJwtSigner));
  return queries;
}

/**
 * `ziti.rpc.auth.call.verifyExtJwtSecondary`: the gateway asks auth whether a bearer token is a
 * valid JWT of the signer a session's auth policy requires, for that session's identity. Auth owns
 * the signers and their keys; the gateway only asks for sessions whose record names a signer, and
 * caches a positive answer until `validUntil`.
 */
export const extJwtSecondaryCall = 'verifyExtJwtSecondary';

export interface ExtJwtSecondaryRequest {
  identityId: string;
  signerId: string;
  jwt: string;
}

export interface ExtJwtSecondaryResult {
  valid: boolean;
  /** ISO time until which a positive answer may be reused (the JWT's expiry, capped by auth). */
  validUntil?: string;
}
