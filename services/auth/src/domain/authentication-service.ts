import { randomUUID } from 'node:crypto';
import { ApiError, eventTypes } from '@ziti/contracts';
import { type ApiSessionRecord, type LiveApiSession, cuid } from '@ziti/platform';
import type { Identity, ListInput, ListPage } from './model.ts';
import { isDisabled } from './model.ts';
import type { ApiSessionQuery, PasswordHasher, SessionStore, UnitOfWork } from './ports.ts';

export interface AuthenticateInput {
  method: string;
  username?: string;
  password?: string;
  configTypes?: string[];
  envInfo?: Record<string, unknown>;
  sdkInfo?: Record<string, unknown>;
  remoteAddress: string;
}

export interface AuthenticatedSession {
  session: LiveApiSession;
  identity: Identity;
}

/** Primary authentication and the life of API sessions. */
export class AuthenticationService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionStore,
    private readonly hasher: PasswordHasher,
    private readonly sessionQuery: ApiSessionQuery,
    readonly sessionTtlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async authenticate(input: AuthenticateInput): Promise<AuthenticatedSession> {
    if (input.method !== 'password') {
      throw new ApiError('NOT_IMPLEMENTED', { code: 'NOT_IMPLEMENTED', message: `authentication method ${input.method} is not implemented yet` });
    }
    if (!input.username || !input.password) {
      throw new ApiError('COULD_NOT_VALIDATE', { field: input.username ? 'password' : 'username', reason: 'username and password fields are required' });
    }
    const password = input.password;
    const found = await this.work(async (s) => {
      const authenticator = await s.authenticators.findByUsername(input.username!);
      if (!authenticator) return null;
      const identity = await s.identities.get(authenticator.identityId);
      const policy = identity ? await s.authPolicies.get(identity.authPolicyId) : null;
      return identity ? { authenticator, identity, policy } : null;
    });
    if (!found || !found.authenticator.passwordHash || !found.authenticator.salt) {
      await this.hasher.burn(password);
      throw new ApiError('INVALID_AUTH');
    }
    const ok = await this.hasher.verify(password, found.authenticator.passwordHash, found.authenticator.salt);
    if (!ok) throw new ApiError('INVALID_AUTH');
    if (isDisabled(found.identity, this.now())) throw new ApiError('INVALID_AUTH');
    if (found.policy?.primary.updb?.allowed === false) throw new ApiError('INVALID_AUTH');

    const identity = await this.recordClientInfo(found.identity, input);
    const now = this.now().toISOString();
    const record: ApiSessionRecord = {
      id: cuid(),
      token: randomUUID(),
      identityId: identity.id,
      identityName: identity.name,
      isAdmin: identity.isAdmin,
      authenticatorId: found.authenticator.id,
      authMethod: 'password',
      ipAddress: input.remoteAddress,
      configTypes: input.configTypes ?? [],
      isMfaRequired: false,
      isMfaComplete: false,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    await this.sessions.create(record, this.sessionTtlSeconds);
    const session = await this.sessions.getById(record.id, this.sessionTtlSeconds);
    if (!session) throw new ApiError('UNHANDLED', 'the API session vanished right after it was created');
    return { session, identity };
  }

  /** envInfo/sdkInfo are overwritten from the authenticate body when they differ (ZITI-FACTS §1.2). */
  private async recordClientInfo(identity: Identity, input: AuthenticateInput): Promise<Identity> {
    const envInfo = input.envInfo ?? identity.envInfo;
    const sdkInfo = input.sdkInfo ?? identity.sdkInfo;
    if (JSON.stringify(envInfo) === JSON.stringify(identity.envInfo) && JSON.stringify(sdkInfo) === JSON.stringify(identity.sdkInfo)) {
      return identity;
    }
    const next = { ...identity, envInfo, sdkInfo };
    await this.work((s) => s.identities.update(next));
    return next;
  }

  async current(apiSessionId: string): Promise<AuthenticatedSession> {
    const session = await this.sessions.getById(apiSessionId, this.sessionTtlSeconds);
    if (!session) throw new ApiError('UNAUTHORIZED');
    const identity = await this.work((s) => s.identities.get(session.identityId));
    if (!identity) throw new ApiError('UNAUTHORIZED');
    return { session, identity };
  }

  async get(id: string): Promise<LiveApiSession> {
    const session = await this.sessions.getById(id, this.sessionTtlSeconds);
    if (!session) throw ApiError.notFound('apiSession', id);
    return session;
  }

  async list(input: ListInput): Promise<ListPage<LiveApiSession>> {
    return this.sessionQuery.list(await this.sessions.listAll(this.sessionTtlSeconds), input);
  }

  async delete(id: string): Promise<void> {
    const session = await this.get(id);
    await this.sessions.delete(id);
    await this.work((s) => s.events.emit(eventTypes.apiSessionDeleted.type, { id, identityId: session.identityId }, eventTypes.apiSessionDeleted.version));
  }

  async hasApiSession(identityId: string): Promise<boolean> {
    return (await this.sessions.listIdsByIdentity(identityId)).length > 0;
  }

  async identityNames(ids: string[]): Promise<Map<string, Identity>> {
    const out = new Map<string, Identity>();
    await this.work(async (s) => {
      for (const id of new Set(ids)) {
        const i = await s.identities.get(id);
        if (i) out.set(id, i);
      }
    });
    return out;
  }
}
