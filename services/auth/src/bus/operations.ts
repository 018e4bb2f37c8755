import { ApiError, type OperationRequest, type OperationRequestOf, type PendingEnrollment } from '@ziti/contracts';
import { type OperationHandlers, firstQueryValue, listInputOf, pageReply, reply, roleFilterOf } from '@ziti/platform';
import type { AuthenticationService } from '../domain/authentication-service.ts';
import type { AuthenticatorService } from '../domain/authenticator-service.ts';
import type { IdentityService } from '../domain/identity-service.ts';
import type { IdentityTypeService } from '../domain/identity-type-service.ts';
import type { Authenticator, IdentityView } from '../domain/model.ts';
import type { EnrollmentPort } from '../domain/credential-service.ts';
import {
  apiSessionDetail,
  authenticatorDetail,
  currentApiSessionDetail,
  identityDetail,
  identityTypeDetail,
} from './mappers.ts';
import { type AuthenticationOperationDeps, authenticationOperations } from './authentication-operations.ts';

export interface AuthOperationDeps {
  identities: IdentityService;
  authenticators: AuthenticatorService;
  authentication: AuthenticationService;
  identityTypes: IdentityTypeService;
  /** pki-enrollment's outstanding enrollments, shown in identity details. */
  enrollments?: EnrollmentPort;
  /**
   * The event positions a read made now reflects at least (auth's own, and its consumer's of
   * pki-enrollment): a `/current-identity` answer carries them so a gateway may keep it until an
   * event changes it (docs/adr/0015).
   */
  positionsReflected?: () => Promise<Record<string, number>>;
}
export type AllAuthOperationDeps = AuthOperationDeps & Partial<AuthenticationOperationDeps>;

function caller(req: OperationRequest) {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return req.caller;
}

const id = (req: OperationRequest) => req.params.id ?? '';

/** Every operation auth owns, keyed `<api>.<operationId>` (the compiler checks it names each one). */
export function authOperations(deps: AllAuthOperationDeps = {} as AllAuthOperationDeps): OperationHandlers<'auth'> {
  const { identities, authenticators, authentication, identityTypes } = deps;

  /**
   * The details of identities read with what they show (`IdentityView`, one statement). Only the
   * identities the enrollment read model knows to have an outstanding enrollment are asked about
   * at pki-enrollment (docs/adr/0012; nearly none: no bus call at all); a request that follows its
   * own enrollment write has already waited for auth's consumer of pki-enrollment (`after`,
   * docs/adr/0008). Live API sessions come from the session store unless the caller is the
   * identity itself (`/current-identity`: it holds one).
   */
  async function detailsOf(views: IdentityView[], callerIsIdentity = false) {
    if (views.length === 0) return [];
    const ids = views.map((v) => v.identity.id);
    const enrolling = views.filter((v) => v.hasOutstandingEnrollment).map((v) => v.identity.id);
    const [pending, sessions] = await Promise.all([
      deps.enrollments && enrolling.length > 0
        ? deps.enrollments.pendingFor(enrolling)
        : ({} as Record<string, PendingEnrollment[]>),
      callerIsIdentity ? undefined : authentication.identitiesWithApiSessions(ids),
    ]);
    return views.map((v) =>
      identityDetail(v.identity, {
        authenticators: v.authenticators,
        authPolicyName: v.authPolicyName,
        hasApiSession: sessions ? sessions.has(v.identity.id) : true,
        enrollments: pending[v.identity.id] ?? [],
        isMfaEnabled: v.isMfaEnabled,
      }),
    );
  }

  async function authenticatorDetails(list: Authenticator[]) {
    const owners = await authentication.identityNames(list.map((a) => a.identityId));
    return list.map((a) => authenticatorDetail(a, owners.get(a.identityId)));
  }

  const authenticate = async (req: OperationRequestOf<'client.authenticate' | 'management.authenticate'>) => {
    const b = req.body ?? {};
    const { session, identity, authQueries } = await authentication.authenticate({
      method: firstQueryValue(req.query.method) ?? '',
      ...(b.username !== undefined ? { username: b.username } : {}),
      ...(b.password !== undefined ? { password: b.password } : {}),
      ...(b.configTypes ? { configTypes: b.configTypes } : {}),
      ...(b.envInfo ? { envInfo: b.envInfo } : {}),
      ...(b.sdkInfo ? { sdkInfo: b.sdkInfo } : {}),
      remoteAddress: req.remoteAddress,
      ...(req.clientCertChain ? { clientCertChain: req.clientCertChain } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    return {
      status: 200,
      body: {
        data: currentApiSessionDetail(session, identity, authentication.sessionTtlSeconds, authQueries),
        meta: {},
      },
      headers: { 'zt-session': session.token },
    };
  };

  const getCurrentApiSession = async (req: OperationRequest) => {
    const who = caller(req);
    const { session, identity } = await authentication.current(who.apiSessionId);
    // The gateway computed this request's pending factors (the external JWT depends on the request).
    return reply.ok(currentApiSessionDetail(session, identity, authentication.sessionTtlSeconds, who.authQueries));
  };

  const logout = async (req: OperationRequest) => {
    await authentication.delete(caller(req).apiSessionId, 'logout');
    return reply.empty();
  };

  const currentIdentity = async (req: OperationRequest) => {
    // Read first: the answer reflects at least these positions.
    const reflects = await deps.positionsReflected?.();
    const [detail] = await detailsOf([await identities.view(caller(req).identityId)], true);
    // The reference answers with its own links and a nil meta (ZITI-FACTS §14.4); `{}` keeps
    // generated clients that require `meta` working.
    const answer = reply.json({
      data: { ...detail, _links: { self: { href: './current-identity' }, mfa: { href: './current-identity/mfa' } } },
      meta: {},
    });
    // Never kept: an answer that shows enrollment tokens, or that the clock changes (a timed disable).
    const keepable =
      reflects !== undefined &&
      detail !== undefined &&
      Object.keys(detail.enrollment).length === 0 &&
      !('disabledUntil' in detail);
    return keepable ? { ...answer, reflects } : answer;
  };

  return {
    'client.authenticate': authenticate,
    'management.authenticate': authenticate,
    'client.getCurrentAPISession': getCurrentApiSession,
    'management.getCurrentAPISession': getCurrentApiSession,
    'client.deleteCurrentApiSession': logout,
    'management.deleteCurrentApiSession': logout,
    'client.getCurrentIdentity': currentIdentity,
    'management.getCurrentIdentity': currentIdentity,

    'management.listAPISessions': async (req) => {
      const p = await authentication.list(listInputOf(req));
      const owners = await authentication.identityNames(p.items.map((s) => s.identityId));
      return pageReply(p, (s) => apiSessionDetail(s, owners.get(s.identityId)));
    },
    'management.detailAPISessions': async (req) => {
      const s = await authentication.get(id(req));
      const owners = await authentication.identityNames([s.identityId]);
      return reply.ok(apiSessionDetail(s, owners.get(s.identityId)));
    },
    'management.deleteAPISessions': async (req) => {
      await authentication.delete(id(req));
      return reply.empty();
    },

    'management.listIdentities': async (req) => {
      const page = await identities.listViews(listInputOf(req), roleFilterOf(req));
      return pageReply({ ...page, items: await detailsOf(page.items) });
    },
    'management.createIdentity': async (req) => {
      const created = await identities.create(req.body);
      return reply.created(created.id, 'identities');
    },
    'management.detailIdentity': async (req) => reply.ok((await detailsOf([await identities.view(id(req))]))[0]),
    'management.updateIdentity': async (req) => {
      await identities.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchIdentity': async (req) => {
      await identities.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteIdentity': async (req) => {
      await identities.delete(id(req));
      return reply.empty();
    },
    'management.disableIdentity': async (req) => {
      await identities.disable(id(req), req.body.durationMinutes ?? 0);
      // The reference writes nothing on success; the spec declares the empty envelope, which
      // generated clients require, so we send that.
      return reply.empty();
    },
    'management.enableIdentity': async (req) => {
      await identities.enable(id(req));
      return reply.empty();
    },
    'management.getIdentityAuthenticators': async (req) => {
      const page = await authenticators.list(listInputOf(req), id(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },

    'management.listAuthenticators': async (req) => {
      const page = await authenticators.list(listInputOf(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },
    'management.createAuthenticator': async (req) => {
      const created = await authenticators.create(req.body);
      return reply.created(created.id, 'authenticators');
    },
    'management.detailAuthenticator': async (req) =>
      reply.ok((await authenticatorDetails([await authenticators.get(id(req))]))[0]),
    'management.updateAuthenticator': async (req) => {
      await authenticators.update(id(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchAuthenticator': async (req) => {
      await authenticators.update(id(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteAuthenticator': async (req) => {
      await authenticators.delete(id(req));
      return reply.empty();
    },

    'management.listIdentityTypes': async (req) =>
      pageReply(await identityTypes.list(listInputOf(req)), identityTypeDetail),
    'management.detailIdentityType': async (req) => reply.ok(identityTypeDetail(await identityTypes.get(id(req)))),
    ...authenticationOperations(deps as AuthOperationDeps & AuthenticationOperationDeps, { authenticatorDetails }),
  };
}
