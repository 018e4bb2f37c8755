import { ApiError, type OperationRequest, type PendingEnrollment, listEnvelope } from '@ziti/contracts';
import {
  type OperationHandler,
  type OperationHandlers,
  firstQueryValue,
  listInputOf,
  reply,
  roleFilterOf,
} from '@ziti/platform';
import type { AuthenticationService } from '../domain/authentication-service.ts';
import type { AuthenticatorInput, AuthenticatorService } from '../domain/authenticator-service.ts';
import type { IdentityInput, IdentityService } from '../domain/identity-service.ts';
import type { IdentityTypeService } from '../domain/identity-type-service.ts';
import type { Authenticator, IdentityView, ListPage } from '../domain/model.ts';
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

const body = <T>(req: OperationRequest) => (req.body ?? {}) as T;
const id = (req: OperationRequest) => req.params.id ?? '';

/** The operations auth implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function authOperations(deps: AllAuthOperationDeps = {} as AllAuthOperationDeps): OperationHandlers {
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

  const listPage = <T, W>(p: ListPage<T>, map: (items: T[]) => Promise<W[]> | W[]) =>
    Promise.resolve(map(p.items)).then((data) =>
      reply.json(listEnvelope(data, { ...p.pagination, totalCount: p.totalCount }, p.filterableFields)),
    );

  async function authenticatorDetails(list: Authenticator[]) {
    const owners = await authentication.identityNames(list.map((a) => a.identityId));
    return list.map((a) => authenticatorDetail(a, owners.get(a.identityId)));
  }

  const authenticate: OperationHandler = async (req) => {
    const b = body<{
      username?: string;
      password?: string;
      configTypes?: string[];
      envInfo?: Record<string, unknown>;
      sdkInfo?: Record<string, unknown>;
    }>(req);
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

  const getCurrentApiSession: OperationHandler = async (req) => {
    const who = caller(req);
    const { session, identity } = await authentication.current(who.apiSessionId);
    // The gateway computed this request's pending factors (the external JWT depends on the request).
    return reply.ok(currentApiSessionDetail(session, identity, authentication.sessionTtlSeconds, who.authQueries));
  };

  const logout: OperationHandler = async (req) => {
    await authentication.delete(caller(req).apiSessionId, 'logout');
    return reply.empty();
  };

  const currentIdentity: OperationHandler = async (req) => {
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

  const handlers: OperationHandlers = {};
  for (const api of ['client', 'management'] as const) {
    handlers[`${api}.authenticate`] = authenticate;
    handlers[`${api}.getCurrentAPISession`] = getCurrentApiSession;
    handlers[`${api}.deleteCurrentApiSession`] = logout;
    handlers[`${api}.getCurrentIdentity`] = currentIdentity;
  }

  Object.assign(handlers, {
    'management.listAPISessions': async (req: OperationRequest) => {
      const p = await authentication.list(listInputOf(req));
      const owners = await authentication.identityNames(p.items.map((s) => s.identityId));
      return listPage(p, (items) => items.map((s) => apiSessionDetail(s, owners.get(s.identityId))));
    },
    'management.detailAPISessions': async (req: OperationRequest) => {
      const s = await authentication.get(id(req));
      const owners = await authentication.identityNames([s.identityId]);
      return reply.ok(apiSessionDetail(s, owners.get(s.identityId)));
    },
    'management.deleteAPISessions': async (req: OperationRequest) => {
      await authentication.delete(id(req));
      return reply.empty();
    },

    'management.listIdentities': async (req: OperationRequest) =>
      listPage(await identities.listViews(listInputOf(req), roleFilterOf(req)), (views) => detailsOf(views)),
    'management.createIdentity': async (req: OperationRequest) => {
      const created = await identities.create(body<IdentityInput>(req));
      return reply.created(created.id, 'identities');
    },
    'management.detailIdentity': async (req: OperationRequest) =>
      reply.ok((await detailsOf([await identities.view(id(req))]))[0]),
    'management.updateIdentity': async (req: OperationRequest) => {
      await identities.update(id(req), body<IdentityInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchIdentity': async (req: OperationRequest) => {
      await identities.update(id(req), body<IdentityInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteIdentity': async (req: OperationRequest) => {
      await identities.delete(id(req));
      return reply.empty();
    },
    'management.disableIdentity': async (req: OperationRequest) => {
      await identities.disable(id(req), body<{ durationMinutes?: number }>(req).durationMinutes ?? 0);
      // The reference writes nothing on success; the spec declares the empty envelope, which
      // generated clients require, so we send that.
      return reply.empty();
    },
    'management.enableIdentity': async (req: OperationRequest) => {
      await identities.enable(id(req));
      return reply.empty();
    },
    'management.getIdentityAuthenticators': async (req: OperationRequest) =>
      listPage(await authenticators.list(listInputOf(req), id(req)), authenticatorDetails),

    'management.listAuthenticators': async (req: OperationRequest) =>
      listPage(await authenticators.list(listInputOf(req)), authenticatorDetails),
    'management.createAuthenticator': async (req: OperationRequest) => {
      const created = await authenticators.create(body<AuthenticatorInput>(req));
      return reply.created(created.id, 'authenticators');
    },
    'management.detailAuthenticator': async (req: OperationRequest) =>
      reply.ok((await authenticatorDetails([await authenticators.get(id(req))]))[0]),
    'management.updateAuthenticator': async (req: OperationRequest) => {
      await authenticators.update(id(req), body<AuthenticatorInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchAuthenticator': async (req: OperationRequest) => {
      await authenticators.update(id(req), body<AuthenticatorInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteAuthenticator': async (req: OperationRequest) => {
      await authenticators.delete(id(req));
      return reply.empty();
    },

    'management.listIdentityTypes': async (req: OperationRequest) =>
      listPage(await identityTypes.list(listInputOf(req)), (items) => items.map(identityTypeDetail)),
    'management.detailIdentityType': async (req: OperationRequest) =>
      reply.ok(identityTypeDetail(await identityTypes.get(id(req)))),
  });
  Object.assign(
    handlers,
    authenticationOperations(deps as AuthOperationDeps & AuthenticationOperationDeps, {
      listPage,
      authenticatorDetails,
    }),
  );
  return handlers;
}
