import { ApiError } from '@ziti/contracts';
import type {
  ExtJwtSecondaryRequest,
  ExtJwtSecondaryResult,
  LiveApiSession,
} from '@ziti/platform/sessions/api-session-store';
import {
  type AttemptSubject,
  failureReason,
  subjectFields,
} from '../authentication-attempts/authentication-attempts.domain.ts';
import type { AuthenticationAttempt } from '../authentication-attempts/authentication-attempts.ports.ts';
import { emitApiSessionDeleted } from './api-session-events.domain.ts';
import { CertificateLogin } from './certificate-login.domain.ts';
import { ExternalJwtLogin } from './external-jwt-login.domain.ts';
import type { AuthenticateInput, AuthenticatedSession, AuthenticationDeps, LoginContext } from './login.domain.ts';
import { PasswordLogin } from './password-login.domain.ts';
import { SessionOpening } from './session-opening.domain.ts';
import type { Identity, ListInput, ListPage } from '../shared/model.domain.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';

export type { ChainVerifier, ClientCertificateTrust } from './certificate-login.domain.ts';
export type { AuthenticateInput, AuthenticatedSession, AuthenticationDeps } from './login.domain.ts';
export { bearerToken } from './login.domain.ts';

/** The login methods, as `authenticate` names them (and the attempts they report). */
type LoginMethod = Extract<AuthenticationAttempt['method'], 'password' | 'cert' | 'ext-jwt'>;
const loginMethods: ReadonlySet<string> = new Set<LoginMethod>(['password', 'cert', 'ext-jwt']);

/**
 * Primary authentication (password, certificate, external JWT), the API sessions it opens, and
 * the secondary external-JWT check the gateway asks for. Every refusal is INVALID_AUTH; the
 * reason goes to `onRefused` (the log), never to the client. Each login method is its own class
 * (`*-login.domain.ts` beside this file), sharing the opening of the session (session-opening.domain.ts).
 * Every attempt of a known method, success or failure, is reported to `attempts` with the error
 * code the caller gets (docs/adr/0021).
 */
export class AuthenticationService {
  readonly sessionTtlSeconds: number;
  private readonly now: () => Date;
  private readonly reader: UnitOfWork;
  private readonly password: PasswordLogin;
  private readonly certificate: CertificateLogin;
  private readonly externalJwt: ExternalJwtLogin;

  constructor(private readonly deps: AuthenticationDeps) {
    this.sessionTtlSeconds = deps.sessionTtlSeconds;
    this.now = deps.now ?? (() => new Date());
    this.reader = deps.read ?? deps.work;
    const login: LoginContext = {
      deps,
      now: this.now,
      reader: this.reader,
      refuse: (reason, detail = {}) => {
        deps.onRefused?.(reason, detail);
        throw new ApiError('INVALID_AUTH');
      },
    };
    const sessions = new SessionOpening(login);
    this.password = new PasswordLogin(login, sessions);
    this.certificate = new CertificateLogin(login, sessions);
    this.externalJwt = new ExternalJwtLogin(login, sessions);
  }

  async authenticate(input: AuthenticateInput): Promise<AuthenticatedSession> {
    // An unknown method is refused before anything is tried: not an attempt (and not a value to keep).
    if (!loginMethods.has(input.method)) {
      throw new ApiError('INVALID_AUTH_METHOD', {
        field: 'method',
        reason: `unknown authentication method ${input.method}`,
        value: input.method,
      });
    }
    const method = input.method as LoginMethod;
    const subject: AttemptSubject = {};
    try {
      const authenticated = await this.login(method, input, subject);
      const { session, identity } = authenticated;
      this.deps.attempts.report({
        method,
        outcome: 'succeeded',
        ...subjectFields({ identity, authenticatorId: session.authenticatorId }),
        apiSessionId: session.id,
        at: this.now(),
      });
      return authenticated;
    } catch (err) {
      this.deps.attempts.report({
        method,
        outcome: 'failed',
        ...subjectFields(subject),
        reason: failureReason(err),
        at: this.now(),
      });
      throw err;
    }
  }

  private login(method: LoginMethod, input: AuthenticateInput, subject: AttemptSubject): Promise<AuthenticatedSession> {
    switch (method) {
      case 'password':
        return this.password.authenticate(input, subject);
      case 'cert':
        return this.certificate.authenticate(input, subject);
      case 'ext-jwt':
        return this.externalJwt.authenticate(input, subject);
    }
  }

  /** `ziti.rpc.auth.call.verifyExtJwtSecondary`: the gateway's per-request check. */
  async verifySecondary(request: ExtJwtSecondaryRequest): Promise<ExtJwtSecondaryResult> {
    return this.externalJwt.verifySecondary(request);
  }

  // ---------------------------------------------------------------------------------- sessions

  async current(apiSessionId: string): Promise<{ session: LiveApiSession; identity: Identity }> {
    const session = await this.deps.sessions.getById(apiSessionId, this.sessionTtlSeconds);
    if (!session) throw new ApiError('UNAUTHORIZED');
    const identity = await this.reader((s) => s.identities.get(session.identityId));
    if (!identity) throw new ApiError('UNAUTHORIZED');
    return { session, identity };
  }

  async get(id: string): Promise<LiveApiSession> {
    const session = await this.deps.sessions.getById(id, this.sessionTtlSeconds);
    if (!session) throw ApiError.notFound('apiSession', id);
    return session;
  }

  async list(input: ListInput): Promise<ListPage<LiveApiSession>> {
    return this.deps.sessionQuery.list(await this.deps.sessions.listAll(this.sessionTtlSeconds), input);
  }

  /**
   * Logout (`logout`) or an administrator's delete (`admin`): the session ends at once, then its
   * `apiSession.deleted` commits, then its tombstone goes (api-session-events.domain.ts).
   */
  async delete(id: string, reason: 'logout' | 'admin' = 'admin'): Promise<void> {
    const record = await this.deps.sessions.end(id, reason);
    if (!record) throw ApiError.notFound('apiSession', id);
    await this.deps.work((s) => emitApiSessionDeleted(s.events, record, reason, this.now()));
    // If this fails the sweeper announces the tombstone once more: a duplicate, not a loss.
    await this.deps.sessions.forget([id]).catch(() => undefined);
  }

  /** The identities among these with a live API session. */
  identitiesWithApiSessions(identityIds: string[]): Promise<Set<string>> {
    return this.deps.sessions.identitiesWithSessions(identityIds);
  }

  /** The ids of an identity's live API sessions (policy's posture data lists each). */
  apiSessionIdsOf(identityId: string): Promise<string[]> {
    return this.deps.sessions.listIdsByIdentity(identityId);
  }

  async identityNames(ids: string[]): Promise<Map<string, Identity>> {
    const found = await this.reader((s) => s.identities.getMany(ids));
    return new Map(found.map((i) => [i.id, i]));
  }
}
