import { edgeRouterDetailFields, edgeRouterLinks, noVersionInfo } from '@ziti/contracts';
import type {
  Config,
  ConfigType,
  IdentityServiceConfig,
  Router,
  RouterEnrollment,
  Terminator,
} from '../domain/model.ts';

/** Wire shapes of inventory's entities (ZITI-FACTS §5.4, §12): one place maps domain → JSON. */
const ts = (d: Date) => d.toISOString();
const self = (collection: string, id: string) => ({ self: { href: `./${collection}/${id}` } });

function baseOf(
  e: { id: string; tags: Record<string, unknown>; createdAt: Date; updatedAt: Date },
  links: Record<string, { href: string }>,
) {
  return { id: e.id, createdAt: ts(e.createdAt), updatedAt: ts(e.updatedAt), tags: e.tags, _links: links };
}

export function serviceLinks(id: string) {
  const links: Record<string, { href: string }> = self('services', id);
  for (const key of ['service-edge-router-policies', 'service-policies', 'terminators', 'configs'])
    links[key] = { href: `./services/${id}/${key}` };
  return links;
}

export const ref = (entity: string, id: string, name: string | undefined, links: Record<string, { href: string }>) => ({
  id,
  ...(name !== undefined ? { name } : {}),
  entity,
  _links: links,
});

export function configTypeDetail(t: ConfigType) {
  return { ...baseOf(t, self('config-types', t.id)), name: t.name, schema: t.schema };
}

export function configDetail(c: Config, type: ConfigType | undefined) {
  return {
    ...baseOf(c, self('configs', c.id)),
    name: c.name,
    configTypeId: c.configTypeId,
    configType: ref('config-types', c.configTypeId, type?.name, self('config-types', c.configTypeId)),
    data: c.data,
  };
}

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

/** ZITI-FACTS §12.2: the fields its state decides (shared with policy), its certificates and enrollment. */
export function edgeRouterDetail(r: Router, enrollment?: RouterEnrollment) {
  return {
    ...baseOf(r, edgeRouterLinks(r.id)),
    ...edgeRouterDetailFields(r),
    certPem: r.certPem,
    unverifiedFingerprint: r.unverifiedFingerprint,
    unverifiedCertPem: r.unverifiedCertPem,
    versionInfo: { ...noVersionInfo, ...(r.versionInfo ?? {}) },
    ...enrollmentFields(r, enrollment),
  };
}

/** `/routers` and `/transit-routers` records. */
export function routerDetail(r: Router, collection: 'routers' | 'transit-routers', enrollment?: RouterEnrollment) {
  return {
    ...baseOf(r, self(collection, r.id)),
    name: r.name,
    fingerprint: r.fingerprint ?? '',
    isOnline: false,
    isVerified: r.isVerified,
    cost: r.cost,
    noTraversal: r.noTraversal,
    disabled: r.disabled,
    unverifiedCertPem: r.unverifiedCertPem,
    unverifiedFingerprint: r.unverifiedFingerprint,
    ...enrollmentFields(r, enrollment),
  };
}

/** ZITI-FACTS §12.4: router references point at `./transit-routers/{id}`, as in the reference. */
export function terminatorDetail(t: Terminator, names: { service?: string; router?: string }) {
  return {
    ...baseOf(t, self('terminators', t.id)),
    serviceId: t.serviceId,
    service: ref('services', t.serviceId, names.service, serviceLinks(t.serviceId)),
    routerId: t.routerId,
    router: ref('transit-routers', t.routerId, names.router, self('transit-routers', t.routerId)),
    binding: t.binding,
    address: t.address,
    identity: t.instanceId,
    cost: t.cost,
    dynamicCost: t.cost,
    precedence: t.precedence,
  };
}

/** A `terminatorClientDetail`: what a client that may see the service is shown of a terminator. */
export function terminatorClientDetail(t: Terminator, serviceName: string | undefined) {
  return {
    ...baseOf(t, self('terminators', t.id)),
    serviceId: t.serviceId,
    service: ref('services', t.serviceId, serviceName, serviceLinks(t.serviceId)),
    routerId: t.routerId,
    identity: t.instanceId,
  };
}

export function serviceConfigDetail(l: IdentityServiceConfig, names: { service?: string; config?: string }) {
  return {
    serviceId: l.serviceId,
    service: ref('services', l.serviceId, names.service, serviceLinks(l.serviceId)),
    configId: l.configId,
    config: ref('configs', l.configId, names.config, self('configs', l.configId)),
  };
}

/** Go's zero time: what a Go client reads for a time that was never set. */
const zeroTime = '0001-01-01T00:00:00.000Z';

/**
 * ZITI-FACTS §13. The reference answers null for times and an error that are unset, which the
 * spec (required, not nullable) forbids and generated clients reject: unset times are Go's zero
 * time, no error is "", no results are [].
 */
export function dataIntegrityDetail(s: {
  inProgress: boolean;
  fixingErrors: boolean;
  tooManyErrors: boolean;
  startTime: Date | null;
  endTime: Date | null;
  error: string | null;
  results: { description: string; fixed: boolean }[];
}) {
  return {
    inProgress: s.inProgress,
    fixingErrors: s.fixingErrors,
    tooManyErrors: s.tooManyErrors,
    startTime: s.startTime ? ts(s.startTime) : zeroTime,
    endTime: s.endTime ? ts(s.endTime) : zeroTime,
    error: s.error ?? '',
    results: s.results,
  };
}
