import { type AuthQuery, authCallContracts } from '@ziti/contracts';

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

/** What `touch` answers: the live session and the event positions recorded for it (read-your-writes). */
export type TouchedApiSession = LiveApiSession & {
  /** Per event source (`auth`, `inventory`, …), the highest position recorded for this session; `{}` when none. */
  positions: Record<string, number>;
};

/** A session that ended and whose end is to be announced (see `claimEnded`). */
export interface EndedApiSession {
  record: ApiSessionRecord;
  /** Why `end` ended it, or null when its sliding expiry passed. */
  reason: string | null;
  /** When it ended: the `end` call, or the moment its expiry passed. */
  endedAt: string;
}

/**
 * How a session ends, so that no end goes unannounced (docs/adr/0002):
 * - `end`/`endByIdentity` stop the token at once and leave a tombstone (record + reason) in the
 *   expiry index, due after a grace period; the caller announces the end in its unit of work and
 *   then `forget`s the tombstone.
 * - Expired sessions stay in the index with their record until announced.
 * - `claimEnded` hands due entries (expired sessions and tombstones nobody forgot: a crash, a
 *   rolled-back transaction) to one sweeper at a time, leased for `leaseMs`; the sweeper announces
 *   them and `forget`s them. A sweeper that dies before `forget` loses the lease and another
 *   replica claims the entries again: an end may be announced twice, never not at all.
 */
export interface ApiSessionStore {
  create(record: ApiSessionRecord, ttlSeconds: number): Promise<void>;
  /**
   * Finds a session by token and slides its expiry (and that of its positions), in one round
   * trip; null when unknown, ended or expired.
   */
  touch(token: string, ttlSeconds: number): Promise<TouchedApiSession | null>;
  getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null>;
  /** Rewrites a live session's record (its expiry is left as it is). */
  update(id: string, patch: Partial<Omit<ApiSessionRecord, 'id' | 'token'>>, ttlSeconds: number): Promise<void>;
  /**
   * Merges event positions into the session's (`as:pos:<id>`), keeping per source the greater of
   * the stored and the new value, atomically; the positions expire with the session (`ttlSeconds`).
   */
  recordPositions(sessionId: string, positions: Record<string, number>, ttlSeconds: number): Promise<void>;
  /** Removes a session and everything kept for it, without a tombstone (nothing will announce it). */
  delete(id: string): Promise<boolean>;
  /** `delete` for every session of an identity; returns the ids of the live ones removed. */
  deleteByIdentity(identityId: string): Promise<string[]>;
  /**
   * Ends a live session now (its token stops working) and keeps a tombstone with `reason`;
   * answers its record, or null when no live session has this id (unknown, expired, already ended).
   */
  end(id: string, reason: string): Promise<ApiSessionRecord | null>;
  /**
   * `end` for every live session of an identity. Also answers the sessions ended earlier for the
   * same identity and reason whose tombstones were not forgotten yet, so an operation retried
   * after a failure announces them. With `authenticatorId`, only the sessions made with that
   * authenticator (the credential went: deleted, re-enrolled).
   */
  endByIdentity(identityId: string, reason: string, authenticatorId?: string): Promise<ApiSessionRecord[]>;
  /** Claims up to `limit` due entries (expired sessions, tombstones past their grace) for `leaseMs`. */
  claimEnded(limit: number, leaseMs: number): Promise<EndedApiSession[]>;
  /** Drops what is kept of ended sessions once their end is announced (live sessions are left alone). */
  forget(ids: string[]): Promise<void>;
  listIdsByIdentity(identityId: string): Promise<string[]>;
  /** Which of the identities have a live API session (identity lists: a few round trips, not one per identity). */
  identitiesWithSessions(identityIds: string[]): Promise<Set<string>>;
  listAll(ttlSeconds: number): Promise<LiveApiSession[]>;
  /**
   * The live sessions a page at a time, for a walk over all of them (a router's full sync): start
   * with `cursor` undefined, go on with the cursor answered until it is null. A session live for the
   * whole walk is answered at least once (possibly twice); one that opens or ends during it may or
   * may not be.
   */
  scanLive(cursor: string | undefined, count: number): Promise<{ records: ApiSessionRecord[]; cursor: string | null }>;
  /**
   * How many sessions are live, cheaply (for metrics): one command on Redis, whose live-session
   * index may still count sessions that expired since the sweeper's last pass.
   */
  countLive(): Promise<number>;
  close(): Promise<void>;
}

/** How long a tombstone waits for its `forget` before the sweeper announces it itself. */
export const defaultEndGraceMs = 30_000;

/** Validates positions for `recordPositions`: non-negative safe integers. */
export function checkPositions(positions: Record<string, number>): [string, number][] {
  const entries = Object.entries(positions);
  for (const [source, position] of entries) {
    if (!Number.isSafeInteger(position) || position < 0) {
      throw new TypeError(`position of ${source} must be a non-negative integer, got ${position}`);
    }
  }
  return entries;
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
 * caches a positive answer until `validUntil`. Declared in contracts (`authCallContracts`).
 */
export const extJwtSecondaryCall = authCallContracts.verifyExtJwtSecondary.action;

export type { ExtJwtSecondaryRequest, ExtJwtSecondaryResult } from '@ziti/contracts';
