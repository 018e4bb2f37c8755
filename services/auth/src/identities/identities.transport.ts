import type { OperationRequest, PendingEnrollment } from '@ziti/contracts';
import {
  type OperationHandlers,
  callerOf,
  listInputOf,
  pageReply,
  pathIdOf,
  reply,
  roleFilterOf,
} from '@ziti/platform';
import type { AuthenticationService } from '../api-sessions/authentication.domain.ts';
import type { EnrollmentPort } from '../credentials/credentials.domain.ts';
import type { IdentityView } from '../shared/model.domain.ts';
import type { IdentityService } from './identities.domain.ts';
import { identityDetail } from './identities.mapper.ts';

export interface IdentityOperationDeps {
  identities: IdentityService;
  authentication: AuthenticationService;
  /** pki-enrollment's outstanding enrollments, shown in identity details. */
  enrollments?: EnrollmentPort;
  /**
   * The event positions a read made now reflects at least (auth's own, and its consumer's of
   * pki-enrollment): a `/current-identity` answer carries them so a gateway may keep it until an
   * event changes it (docs/adr/0015).
   */
  positionsReflected?: () => Promise<Record<string, number>>;
}

/** What an identity's management detail shows beside its view: live API sessions, pending enrollments. */
export interface IdentityDetailDeps {
  authentication: Pick<AuthenticationService, 'identitiesWithApiSessions'>;
  /** pki-enrollment's outstanding enrollments, shown in identity details. */
  enrollments?: EnrollmentPort | undefined;
}

/**
 * The management details of identities read with what they show (`IdentityView`, one statement):
 * what `GET /identities/{id}`, the identity list, `/current-identity` and the `identityDetails` call
 * (policy's association lists) answer alike. Only the identities the enrollment read model knows to
 * have an outstanding enrollment are asked about at pki-enrollment (docs/adr/0012; nearly none: no
 * bus call at all); a request that follows its own enrollment write has already waited for auth's
 * consumer of pki-enrollment (`after`, docs/adr/0008). Live API sessions come from the session store
 * unless the caller is the identity itself (`/current-identity`: it holds one).
 */
export async function identityDetailsOf(deps: IdentityDetailDeps, views: IdentityView[], callerIsIdentity = false) {
  if (views.length === 0) return [];
  const ids = views.map((v) => v.identity.id);
  const enrolling = views.filter((v) => v.hasOutstandingEnrollment).map((v) => v.identity.id);
  const [pending, sessions] = await Promise.all([
    deps.enrollments && enrolling.length > 0
      ? deps.enrollments.pendingFor(enrolling)
      : ({} as Record<string, PendingEnrollment[]>),
    callerIsIdentity ? undefined : deps.authentication.identitiesWithApiSessions(ids),
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

/** Identities (management) and `/current-identity` (both APIs). */
export function identityOperations(deps: IdentityOperationDeps) {
  const { identities } = deps;

  const detailsOf = (views: IdentityView[], callerIsIdentity = false) =>
    identityDetailsOf(deps, views, callerIsIdentity);

  const currentIdentity = async (req: OperationRequest) => {
    // Read first: the answer reflects at least these positions.
    const reflects = await deps.positionsReflected?.();
    const [detail] = await detailsOf([await identities.view(callerOf(req).identityId)], true);
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
    'client.getCurrentIdentity': currentIdentity,
    'management.getCurrentIdentity': currentIdentity,

    'management.listIdentities': async (req) => {
      const page = await identities.listViews(listInputOf(req), roleFilterOf(req));
      return pageReply({ ...page, items: await detailsOf(page.items) });
    },
    'management.createIdentity': async (req) => {
      const created = await identities.create(req.body);
      return reply.created(created.id, 'identities');
    },
    'management.detailIdentity': async (req) => reply.ok((await detailsOf([await identities.view(pathIdOf(req))]))[0]),
    'management.updateIdentity': async (req) => {
      await identities.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchIdentity': async (req) => {
      await identities.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteIdentity': async (req) => {
      await identities.delete(pathIdOf(req));
      return reply.empty();
    },
    'management.disableIdentity': async (req) => {
      await identities.disable(pathIdOf(req), req.body.durationMinutes ?? 0);
      // The reference writes nothing on success; the spec declares the empty envelope, which
      // generated clients require, so we send that.
      return reply.empty();
    },
    'management.enableIdentity': async (req) => {
      await identities.enable(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
