import { randomUUID } from 'node:crypto';
import { eventTypes } from '@ziti/contracts';
import { type ApiSessionRecord, liveSession, pendingAuthQueries } from '@ziti/platform/sessions/api-session-store';
import { cuid } from '@ziti/platform/ids';
import { identityState } from '../identities/identities.domain.ts';
import type { Identity } from '../shared/model.domain.ts';
import { isDisabled } from '../shared/model.domain.ts';
import type { AuthStores } from '../shared/stores.ports.ts';
import { secondaryJwt } from './external-jwt-login.domain.ts';
import { type SessionContext, sessionContext } from './login-factors.domain.ts';
import { type AuthenticateInput, type AuthenticatedSession, type LoginContext, bearerToken } from './login.domain.ts';

/** `configTypes: ["all"]` asks for every config type. */
const allConfigTypes = 'all';

/** The API session a successful login opens, whatever its method. */
export class SessionOpening {
  constructor(private readonly login: LoginContext) {}

  async open(
    identity: Identity,
    authenticatorId: string,
    method: 'password' | 'cert' | 'ext-jwt',
    input: AuthenticateInput,
    verifiedSignerId: string | null,
    /** What `sessionContext` read, when the caller read it already. */
    preloaded?: SessionContext,
  ): Promise<AuthenticatedSession> {
    const { deps, now: clock, refuse } = this.login;
    const ttl = deps.sessionTtlSeconds;
    if (isDisabled(identity, clock())) return refuse('DISABLED', { identityId: identity.id });
    // Asked for while the factors are read; it never rejects (a failure keeps the values as sent).
    const configTypes = this.configTypeIds(identity, input.configTypes ?? []);
    const { factors, mfaVerified, requiredSigner } =
      preloaded ?? (await deps.work((s: AuthStores) => sessionContext(s, identity)));
    const extJwtSatisfied =
      !factors.requiredExtJwtSigner ||
      verifiedSignerId === factors.requiredExtJwtSigner.id ||
      (await secondaryJwt(this.login, identity, requiredSigner, bearerToken(input.authorization))) !== null;

    const now = clock().toISOString();
    const record: ApiSessionRecord = {
      id: cuid(),
      token: randomUUID(),
      identityId: identity.id,
      identityName: identity.name,
      isAdmin: identity.isAdmin,
      authenticatorId,
      authMethod: method,
      ipAddress: input.remoteAddress,
      configTypes: await configTypes,
      isMfaRequired: mfaVerified,
      isMfaComplete: false,
      requireTotp: factors.requireTotp,
      requiredExtJwtSigner: factors.requiredExtJwtSigner,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    // A login announces nothing (docs/adr/0017): the session lives in Redis, and whoever needs its
    // facts gets them with the caller. Only a changed envInfo/sdkInfo is a write, with its
    // identity.updated; it goes first, so a failed write leaves no session behind.
    const current = await this.recordClientInfo(identity, input);
    await deps.sessions.create(record, ttl);
    // Routers learn of it at once (a login writes no event, docs/adr/0017).
    deps.notices?.opened(record);
    // Just created with the full timeout: no need to read it back.
    const session = liveSession(record, ttl * 1000, ttl);
    return { session, identity: current, authQueries: pendingAuthQueries(record, extJwtSatisfied) };
  }

  /**
   * The login's `configTypes` as its session keeps them: config-type ids (names mapped, unknown
   * values dropped) or just `all`, as the reference keeps them. Only a login that sends some asks
   * inventory, and one that sends `all` needs no answer. A login never fails for this: when
   * inventory does not answer (down, slow) the values are kept as sent, which the service lists
   * still understand (they resolve ids and names alike), and the reason is logged.
   */
  private async configTypeIds(identity: Identity, values: string[]): Promise<string[]> {
    const { deps } = this.login;
    if (values.includes(allConfigTypes)) return [allConfigTypes];
    const sent = [...new Set(values)];
    if (sent.length === 0 || !deps.configTypes) return sent;
    try {
      return await deps.configTypes.ids(sent);
    } catch (err) {
      deps.onConfigTypesUnresolved?.(err, { identityId: identity.id, values: sent.length });
      return sent;
    }
  }

  /**
   * envInfo/sdkInfo are overwritten from the authenticate body when they differ (ZITI-FACTS §1.2),
   * announced as `identity.updated` (its `updatedAt` moves; the gateway's kept answers of the
   * identity show the new values).
   */
  private async recordClientInfo(identity: Identity, input: AuthenticateInput): Promise<Identity> {
    const { deps, now, refuse } = this.login;
    const envInfo = input.envInfo ?? identity.envInfo;
    const sdkInfo = input.sdkInfo ?? identity.sdkInfo;
    if (
      JSON.stringify(envInfo) === JSON.stringify(identity.envInfo) &&
      JSON.stringify(sdkInfo) === JSON.stringify(identity.sdkInfo)
    ) {
      return identity;
    }
    return deps.work(async (s) => {
      // On the stored identity, not the one read before the password check: nothing else is undone.
      const stored = await s.identities.get(identity.id, { forUpdate: true });
      // Deleted or disabled while the password was checked: no session, and no identity.updated
      // announcing an identity that is gone (its consumers would put it back).
      if (!stored) return refuse('UNKNOWN_USERNAME', { identityId: identity.id });
      if (isDisabled(stored, now())) return refuse('DISABLED', { identityId: identity.id });
      const next = { ...stored, envInfo, sdkInfo, updatedAt: now() };
      await s.identities.update(next);
      const t = eventTypes.identityUpdated;
      await s.events.emit(t, identityState(next));
      return next;
    });
  }
}
