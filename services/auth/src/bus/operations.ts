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
import type { Authenticator, Identity, ListPage } from '../domain/model.ts';
import type { AuthStores, UnitOfWork } from '../domain/ports.ts';
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
  work: UnitOfWork;
  /** Stores outside a transaction, for request-path reads (defaults to `work`). */
  read?: UnitOfWork;
  /** pki-enrollment's outstanding enrollments, shown in identity details. */
  enrollments?: EnrollmentPort;
  /**
   * The read model of which identities have an outstanding enrollment (docs/adr/0012): details ask
   * pki-enrollment only for those. Without it every identity is asked about.
   */
  outstandingEnrollments?: { identitiesWithAny(identityIds: string[]): Promise<Set<string>> };
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
  const { identities, authenticators, authentication, work } = deps;

  /**
   * The outstanding enrollments of the identities the read model knows to have one: no bus call at
   * all for identities without (nearly all). A request that follows its own enrollment write has
   * already waited for auth's consumer of pki-enrollment (`after`, docs/adr/0008).
   */
  async function pendingEnrollments(ids: string[]): Promise<Record<string, PendingEnrollment[]>> {
    if (!deps.enrollments) return {};
    const asked = deps.outstandingEnrollments ? [...(await deps.outstandingEnrollments.identitiesWithAny(ids))] : ids;
    return asked.length === 0 ? {} : deps.enrollments.pendingFor(asked);
  }

  async function detailsOf(list: Identity[]) {
    if (list.length === 0) return [];
    const reader = deps.read ?? work;
    const ids = list.map((i) => i.id);
    // Independent lookups, concurrently: names of the auth policies, authenticators, pending
    // enrollments (pki-enrollment), verified MFA and live API sessions.
    const [policyNames, authenticatorsById, pending, withMfa, sessions] = await Promise.all([
      reader(async (s: AuthStores) => {
        const names = new Map<string, string | null>();
        for (const policyId of new Set(list.map((i) => i.authPolicyId)))
          names.set(policyId, (await s.authPolicies.get(policyId))?.name ?? null);
        return names;
      }),
      reader(async (s: AuthStores) => {
        const byIdentity = new Map<string, Authenticator[]>();
        for (const a of await s.authenticators.listByIdentities(ids)) {
          const list = byIdentity.get(a.identityId);
          if (list) list.push(a);
          else byIdentity.set(a.identityId, [a]);
        }
        return byIdentity;
      }),
      pendingEnrollments(ids),
      reader((s: AuthStores) => s.mfa.verifiedAmong(ids)),
      authentication.identitiesWithApiSessions(ids),
    ]);
    return list.map((i) =>
      identityDetail(i, {
        authenticators: authenticatorsById.get(i.id) ?? [],
        authPolicyName: policyNames.get(i.authPolicyId) ?? null,
        hasApiSession: sessions.has(i.id),
        enrollments: pending[i.id] ?? [],
        isMfaEnabled: withMfa.has(i.id),
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
    const identity = await identities.get(caller(req).identityId);
    const [detail] = await detailsOf([identity]);
    // The reference answers with its own links and a nil meta (ZITI-FACTS §14.4); `{}` keeps
    // generated clients that require `meta` working.
    return reply.json({
      data: { ...detail, _links: { self: { href: './current-identity' }, mfa: { href: './current-identity/mfa' } } },
      meta: {},
    });
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
      listPage(await identities.list(listInputOf(req), roleFilterOf(req)), detailsOf),
    'management.createIdentity': async (req: OperationRequest) => {
      const created = await identities.create(body<IdentityInput>(req));
      return reply.created(created.id, 'identities');
    },
    'management.detailIdentity': async (req: OperationRequest) =>
      reply.ok((await detailsOf([await identities.get(id(req))]))[0]),
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
      listPage(await work((s) => s.identityTypes.list(listInputOf(req))), (items) => items.map(identityTypeDetail)),
    'management.detailIdentityType': async (req: OperationRequest) => {
      const t = await work((s) => s.identityTypes.get(id(req)));
      if (!t) throw ApiError.notFound('identityType', id(req));
      return reply.ok(identityTypeDetail(t));
    },
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
