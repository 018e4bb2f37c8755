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
  tags: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
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

export function liveSession(record: ApiSessionRecord, remainingMs: number, ttlSeconds: number, now = Date.now()): LiveApiSession {
  const lastActivity = now - (ttlSeconds * 1000 - Math.max(0, remainingMs));
  const last = Math.max(lastActivity, Date.parse(record.createdAt) || lastActivity);
  return {
    ...record,
    lastActivityAt: new Date(last).toISOString(),
    expiresAt: new Date(last + ttlSeconds * 1000).toISOString(),
  };
}
