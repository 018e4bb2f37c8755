import { identityLinks } from '@ziti/contracts';
import type { PendingEnrollment } from '@ziti/contracts';
import type { AuthenticatorSummary, Identity } from '../shared/model.domain.ts';
import { isDisabled } from '../shared/model.domain.ts';
import { ts } from '../shared/wire.mapper.ts';

/** Wire shapes of identities (ZITI-FACTS §5.4, §12.1). */
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
    // none: null, as the reference reads an empty attribute list back (set to [] or never set)
    roleAttributes: i.roleAttributes.length > 0 ? i.roleAttributes : null,
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
    // Always sent, as the reference does: an identity that never set one hosts at "default".
    defaultHostingPrecedence: i.defaultHostingPrecedence ?? 'default',
    serviceHostingCosts: i.serviceHostingCosts,
    serviceHostingPrecedences: i.serviceHostingPrecedences,
    appData: i.appData,
    envInfo: withoutEmptyStrings(i.envInfo),
    sdkInfo: withoutEmptyStrings(i.sdkInfo),
    authenticators,
    enrollment: identityEnrollment(x.enrollments),
  };
}

/**
 * envInfo and sdkInfo as the reference renders them: each of their fields is a string it leaves
 * out when empty (go-swagger's `omitempty`), so `domain: ""` from a login is not shown.
 */
function withoutEmptyStrings(info: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(info).filter(([, v]) => v !== ''));
}
