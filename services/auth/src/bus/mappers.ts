import { identityLinks } from '@ziti/contracts';
import type { AuthQuery, PendingEnrollment } from '@ziti/contracts';
import { type LiveApiSession, pendingAuthQueries } from '@ziti/platform';
import type { Authenticator, AuthenticatorSummary, Identity, NamedEntity } from '../domain/model.ts';
import { isDisabled } from '../domain/model.ts';

/** Wire shapes of auth's entities (ZITI-FACTS §5.4, §12): one place maps domain → JSON. */
const ts = (d: Date) => d.toISOString();

export function identityRef(i: Pick<Identity, 'id' | 'name' | 'authPolicyId'>) {
  return { id: i.id, name: i.name, entity: 'identities', _links: identityLinks(i.id, i.authPolicyId) };
}

export interface IdentityExtras {
  authenticators: AuthenticatorSummary[];
  hasApiSession: boolean;
  authPolicyName: string | null;
  /** The identity has a verified MFA (TOTP). */
  isMfaEnabled?: boolean;
  /** Outstanding enrollments, from pki-enrollment. */
  enrollments?: PendingEnrollment[];
}

/** `identity.enrollment` (ZITI-FACTS §12.1): the outstanding ott / updb / ottca enrollments. */
export function identityEnrollment(list: PendingEnrollment[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const e of list ?? []) {
    const base = { id: e.id, jwt: e.jwt, token: e.token, expiresAt: e.expiresAt };
    if (e.method === 'ott' || e.method === 'updb') out[e.method] = base;
    if (e.method === 'ottca') {
      out.ottca = {
        ...base,
        ...(e.caId
          ? {
              caId: e.caId,
              ca: {
                id: e.caId,
                ...(e.caName ? { name: e.caName } : {}),
                entity: 'cas',
                _links: { self: { href: `./cas/${e.caId}` } },
              },
            }
          : {}),
      };
    }
  }
  return out;
}

export function identityDetail(i: Identity, x: IdentityExtras, now = new Date()) {
  const authenticators: Record<string, unknown> = {};
  for (const a of x.authenticators) {
    if (a.method === 'updb') authenticators.updb = { id: a.id, username: a.username };
    if (a.method === 'cert') authenticators.cert = { id: a.id, fingerprint: a.certFingerprint };
  }
  return {
    id: i.id,
    createdAt: ts(i.createdAt),
    updatedAt: ts(i.updatedAt),
    tags: i.tags,
    _links: identityLinks(i.id, i.authPolicyId),
    name: i.name,
    type: {
      id: i.typeId,
      name: i.typeId,
      entity: 'identity-types',
      _links: { self: { href: `./identity-types/${i.typeId}` } },
    },
    typeId: i.typeId,
    isAdmin: i.isAdmin,
    isDefaultAdmin: i.isDefaultAdmin,
    roleAttributes: i.roleAttributes,
    hasApiSession: x.hasApiSession,
    // No edge router holds a control connection to this controller yet (the router control plane is
    // not built), so no identity can be connected through one: false is the true answer.
    hasEdgeRouterConnection: false,
    isMfaEnabled: x.isMfaEnabled ?? false,
    authPolicyId: i.authPolicyId,
    authPolicy:
      x.authPolicyName === null
        ? null
        : {
            id: i.authPolicyId,
            name: x.authPolicyName,
            entity: 'auth-policies',
            _links: { self: { href: `./auth-policies/${i.authPolicyId}` } },
          },
    disabled: isDisabled(i, now),
    ...(i.disabledAt ? { disabledAt: ts(i.disabledAt) } : {}),
    ...(i.disabledUntil ? { disabledUntil: ts(i.disabledUntil) } : {}),
    externalId: i.externalId,
    defaultHostingCost: i.defaultHostingCost,
    ...(i.defaultHostingPrecedence ? { defaultHostingPrecedence: i.defaultHostingPrecedence } : {}),
    serviceHostingCosts: i.serviceHostingCosts,
    serviceHostingPrecedences: i.serviceHostingPrecedences,
    appData: i.appData,
    envInfo: i.envInfo,
    sdkInfo: i.sdkInfo,
    authenticators,
    enrollment: identityEnrollment(x.enrollments),
  };
}

export function authenticatorDetail(
  a: Authenticator,
  identity: Pick<Identity, 'id' | 'name' | 'authPolicyId'> | undefined,
) {
  return {
    id: a.id,
    createdAt: ts(a.createdAt),
    updatedAt: ts(a.updatedAt),
    tags: a.tags,
    _links: { self: { href: `./authenticators/${a.id}` }, identities: { href: `./identities/${a.identityId}` } },
    method: a.method,
    identityId: a.identityId,
    identity: identity
      ? identityRef(identity)
      : { id: a.identityId, entity: 'identities', _links: identityLinks(a.identityId, 'default') },
    ...(a.method === 'updb' ? { username: a.username ?? '' } : {}),
    ...(a.method === 'cert' ? { certPem: a.certPem ?? '', fingerprint: a.certFingerprint ?? '' } : {}),
  };
}

export function identityTypeDetail(t: NamedEntity) {
  return {
    id: t.id,
    createdAt: ts(t.createdAt),
    updatedAt: ts(t.updatedAt),
    tags: {},
    _links: { self: { href: `./identity-types/${t.id}` } },
    name: t.name,
  };
}

export function apiSessionDetail(
  s: LiveApiSession,
  identity: Pick<Identity, 'id' | 'name' | 'authPolicyId'> | undefined,
) {
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.lastActivityAt,
    tags: s.tags,
    _links: { self: { href: `./api-sessions/${s.id}` }, sessions: { href: `./api-sessions/${s.id}/sessions` } },
    token: s.token,
    identityId: s.identityId,
    identity: identity
      ? identityRef(identity)
      : {
          id: s.identityId,
          name: s.identityName,
          entity: 'identities',
          _links: identityLinks(s.identityId, 'default'),
        },
    authenticatorId: s.authenticatorId,
    configTypes: s.configTypes,
    ipAddress: s.ipAddress,
    isMfaRequired: s.isMfaRequired,
    isMfaComplete: s.isMfaComplete,
    // Management listings cannot know a request's bearer token: only the MFA factor shows here.
    authQueries: pendingAuthQueries(s, true),
    lastActivityAt: s.lastActivityAt,
    cachedLastActivityAt: s.lastActivityAt,
  };
}

/** The current session, with the secondary factors still pending for this request. */
export function currentApiSessionDetail(
  s: LiveApiSession,
  identity: Identity,
  ttlSeconds: number,
  authQueries: AuthQuery[],
) {
  return { ...apiSessionDetail(s, identity), authQueries, expiresAt: s.expiresAt, expirationSeconds: ttlSeconds };
}
