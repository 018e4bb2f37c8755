import { type RouterPresenceView, edgeRouterDetailFields, edgeRouterLinks } from '@ziti/contracts';
import type { Router, RouterEnrollment } from '../shared/model.domain.ts';
import { baseOf, self, ts } from '../shared/wire.mapper.ts';

/** The enrollment fields of a router that is not verified yet (ZITI-FACTS §8.1, §12.2). */
function enrollmentFields(r: Router, enrollment: RouterEnrollment | undefined) {
  if (r.isVerified || !enrollment) return {};
  return {
    enrollmentJwt: enrollment.jwt,
    enrollmentToken: enrollment.token,
    enrollmentCreatedAt: ts(enrollment.createdAt),
    enrollmentExpiresAt: ts(enrollment.expiresAt),
  };
}

/**
 * ZITI-FACTS §12.2: the fields its state and presence decide (shared with policy: online, hostname,
 * protocols, sync status, version info; the presence as `presenceShown` shows it), its certificates
 * and enrollment.
 */
export function edgeRouterDetail(r: Router, presence: RouterPresenceView, enrollment?: RouterEnrollment) {
  return {
    ...baseOf(r, edgeRouterLinks(r.id)),
    ...edgeRouterDetailFields(r, presence),
    certPem: r.certPem,
    unverifiedFingerprint: r.unverifiedFingerprint,
    unverifiedCertPem: r.unverifiedCertPem,
    ...enrollmentFields(r, enrollment),
  };
}

/**
 * `/routers` and `/transit-routers` records. An edge router listed there is the reference's base
 * router (a router without a transit-router record, `transit_router_store.go` FillEntity): always
 * verified, without enrollment fields, whether or not its edge enrollment is done.
 */
export function routerDetail(
  r: Router,
  collection: 'routers' | 'transit-routers',
  presence: RouterPresenceView,
  enrollment?: RouterEnrollment,
) {
  return {
    ...baseOf(r, self(collection, r.id)),
    name: r.name,
    fingerprint: r.fingerprint ?? '',
    isOnline: presence.isOnline,
    isVerified: r.kind === 'edge' || r.isVerified,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
    unverifiedCertPem: r.unverifiedCertPem,
    unverifiedFingerprint: r.unverifiedFingerprint,
    ...(r.kind === 'edge' ? {} : enrollmentFields(r, enrollment)),
  };
}
