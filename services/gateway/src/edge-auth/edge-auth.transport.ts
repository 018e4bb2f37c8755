// Who is calling: the rate limit on the operations that try a credential, the API session token
// turned into a caller, the secondary factors it still lacks (MFA, an external JWT), and whether the
// operation lets such a caller in.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, type AuthQuery, type Caller, type OperationDef } from '@ziti/contracts';
import { type ApiSessionStore, type LiveApiSession, pendingAuthQueries } from '@ziti/platform';
import type { ExtJwtSecondaryCheck } from './ext-jwt-secondary.transport.ts';
import { rateLimitKey } from './client-address.transport.ts';
import type { AuthRateLimiter } from './rate-limit.domain.ts';

/** What authentication needs of the pipeline's dependencies. */
export interface EdgeAuthDeps {
  sessions: ApiSessionStore;
  sessionTimeoutSeconds: number;
  /** Checks the bearer JWT of sessions whose auth policy requires an external JWT signer. */
  extJwt?: ExtJwtSecondaryCheck;
}

/** The operations that try a credential: password/cert/JWT login and the MFA code. */
const rateLimitedOperations = new Set(['authenticate', 'authenticateMfa']);

/** Whether the operation is one the authentication rate limit counts. */
export function isRateLimited(op: OperationDef): boolean {
  return rateLimitedOperations.has(op.operationId);
}

/**
 * Limits the authentication operations per client address (its /64 for IPv6), as the trusted
 * proxies forwarded it (429 SERVER_TOO_MANY_REQUESTS).
 */
export async function limitAuthenticationAttempts(
  res: ServerResponse,
  op: OperationDef,
  limiter: AuthRateLimiter,
  clientAddress: string,
): Promise<void> {
  if (!rateLimitedOperations.has(op.operationId) || !limiter.enabled) return;
  const decision = await limiter.take(rateLimitKey(clientAddress));
  if (!decision.allowed) {
    res.setHeader('retry-after', String(decision.retryAfterSeconds));
    throw new ApiError('SERVER_TOO_MANY_REQUESTS', {
      code: 'RATE_LIMITED',
      message: 'too many authentication attempts from this address, retry later',
    });
  }
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Go's default `time.String()` layout, which the reference uses for `expires-at`. */
export function goTimeString(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}000000 +0000 UTC`;
}

/** The secondary factors a request's session still lacks (MFA, and the external JWT of this request). */
export async function sessionAuthQueries(
  session: LiveApiSession,
  req: IncomingMessage,
  extJwt: ExtJwtSecondaryCheck | undefined,
): Promise<AuthQuery[]> {
  const authorization = typeof req.headers.authorization === 'string' ? req.headers.authorization : undefined;
  const satisfied = session.requiredExtJwtSigner ? ((await extJwt?.satisfied(session, authorization)) ?? false) : true;
  return pendingAuthQueries(session, satisfied);
}

export type TouchedSession = NonNullable<Awaited<ReturnType<ApiSessionStore['touch']>>>;

/**
 * The caller of a request from its `zt-session` token (touching the session), with the session's
 * expiry headers; UNAUTHORIZED when the operation needs a caller it has not got, an MFA-pending
 * caller on an operation that does not allow one, or a non-admin on an admin operation.
 */
export async function authenticate(
  req: IncomingMessage,
  res: ServerResponse,
  op: OperationDef,
  deps: EdgeAuthDeps,
): Promise<{ caller?: Caller; session?: TouchedSession }> {
  // The reference ignores any session sent to /authenticate and always starts a new one.
  if (op.operationId === 'authenticate') return {};
  const token = req.headers['zt-session'];
  let session: TouchedSession | null = null;
  if (typeof token === 'string' && uuidPattern.test(token)) {
    session = await deps.sessions.touch(token, deps.sessionTimeoutSeconds);
  }
  const caller: Caller | undefined = session
    ? {
        identityId: session.identityId,
        apiSessionId: session.id,
        token: session.token,
        isAdmin: session.isAdmin,
        authQueries: await sessionAuthQueries(session, req, deps.extJwt),
        configTypes: session.configTypes,
      }
    : undefined;
  if (session) {
    res.setHeader('expiration-seconds', String(deps.sessionTimeoutSeconds));
    res.setHeader('expires-at', goTimeString(new Date(session.expiresAt)));
  }
  const found = { ...(caller ? { caller } : {}), ...(session ? { session } : {}) };
  if (op.access === 'none') return found;
  if (!caller) throw presentsCredential(req) ? new ApiError('UNAUTHORIZED') : noCredentialError();
  if (caller.authQueries.length > 0 && !op.mfaPendingOk) throw new ApiError('UNAUTHORIZED');
  if (op.access === 'admin' && !caller.isAdmin) throw new ApiError('UNAUTHORIZED');
  return found;
}

/**
 * Whether the request presents a credential of the specs' security schemes, as go-openapi looks for
 * them: a non-empty `zt-session` header (ztSession), or a bearer token (oauth2) in an
 * `Authorization: Bearer …` header or an `access_token` query parameter.
 */
function presentsCredential(req: IncomingMessage): boolean {
  const session = req.headers['zt-session'];
  if (typeof session === 'string' && session !== '') return true;
  const authorization = req.headers.authorization;
  if (typeof authorization === 'string' && authorization.startsWith('Bearer ') && authorization.length > 7) {
    return true;
  }
  const url = req.url ?? '';
  const query = url.indexOf('?');
  return query >= 0 && (new URLSearchParams(url.slice(query + 1)).get('access_token') ?? '') !== '';
}

/**
 * A request without any credential: the reference's go-openapi security finds no scheme that applies
 * and answers its "unauthenticated for invalid credentials", which becomes the cause of the 401.
 * A credential that does not hold (an unknown or ended session) is a 401 without a cause.
 */
function noCredentialError(): ApiError {
  return new ApiError('UNAUTHORIZED', { code: 'UNHANDLED', message: 'unauthenticated for invalid credentials' });
}
