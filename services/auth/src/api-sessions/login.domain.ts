import type { AuthQuery } from '@ziti/contracts';
import type { LiveApiSession } from '@ziti/platform/sessions/api-session-store';
import type { AuthenticationAttempts } from '../authentication-attempts/authentication-attempts.ports.ts';
import type { SignerKeys } from '../external-jwt-signers/external-jwt.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import type { ApiSessionQuery, ConfigTypeResolver } from './api-sessions.ports.ts';
import type { PasswordHasher } from '../passwords/passwords.ports.ts';
import type { SessionStore, UnitOfWork } from '../shared/stores.ports.ts';
import type { ChainVerifier, ClientCertificateTrust } from './certificate-login.domain.ts';
import type { ApiSessionNotices } from '../router-api-sessions/router-api-sessions.ports.ts';

// What every login method shares: its input, its answer, its dependencies and how it refuses.

export interface AuthenticateInput {
  method: string;
  username?: string;
  password?: string;
  configTypes?: string[];
  envInfo?: Record<string, unknown>;
  sdkInfo?: Record<string, unknown>;
  remoteAddress: string;
  /** The TLS client certificate chain, leaf first (method `cert`). */
  clientCertChain?: string[];
  /** The `Authorization` header (method `ext-jwt`, and the secondary external JWT). */
  authorization?: string;
}

export interface AuthenticatedSession {
  session: LiveApiSession;
  identity: Identity;
  /** The secondary factors still pending for this session (empty: fully authenticated). */
  authQueries: AuthQuery[];
}

export interface AuthenticationDeps {
  work: UnitOfWork;
  /** Stores outside a transaction, for reads on the request path (defaults to `work`). */
  read?: UnitOfWork;
  sessions: SessionStore;
  hasher: PasswordHasher;
  sessionQuery: ApiSessionQuery;
  sessionTtlSeconds: number;
  signerKeys: SignerKeys;
  certificates: ClientCertificateTrust;
  verifyChain: ChainVerifier;
  /** Disables an identity for `minutes` (0 = until enabled) and ends its sessions (updb lockout). */
  lockout: (identityId: string, minutes: number) => Promise<void>;
  /** Why an authentication was refused; the client only ever sees INVALID_AUTH. */
  onRefused?: (reason: string, detail: Record<string, unknown>) => void;
  /** Where every attempt (success or failure) is reported, off the login's path (docs/adr/0021). */
  attempts: AuthenticationAttempts;
  /** Who is told of each opened session for the edge routers (docs/adr/0023); absent where no router listens. */
  notices?: ApiSessionNotices;
  /**
   * Maps a login's `configTypes` to the ids its session keeps (inventory owns config types); absent
   * (tests without inventory), the values are kept as sent.
   */
  configTypes?: ConfigTypeResolver;
  /** Why a login's `configTypes` were kept as sent (the resolver failed); never fails the login. */
  onConfigTypesUnresolved?: (err: unknown, detail: { identityId: string; values: number }) => void;
  now?: () => Date;
}

/** Refuses a login: `reason` goes to `onRefused` (the log), the client sees INVALID_AUTH. */
export type Refuse = (reason: string, detail?: Record<string, unknown>) => never;

/** What the login methods and the session opening are given by AuthenticationService. */
export interface LoginContext {
  deps: AuthenticationDeps;
  now: () => Date;
  /** `deps.read`, or `deps.work` without it. */
  reader: UnitOfWork;
  refuse: Refuse;
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
}
