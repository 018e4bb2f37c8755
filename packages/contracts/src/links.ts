import type { Links } from './envelopes.ts';

/** The identity link set (ZITI-FACTS §5.4), on identity details and every entity ref to an identity. */
export function identityLinks(id: string, authPolicyId: string): Links {
  const links: Links = { self: { href: `./identities/${id}` } };
  for (const key of [
    'edge-router-policies',
    'edge-routers',
    'service-policies',
    'services',
    'posture-data',
    'failed-service-requests',
    'authenticators',
    'enrollments',
    'service-configs',
  ]) {
    links[key] = { href: `./identities/${id}/${key}` };
  }
  links['auth-policies'] = { href: `./auth-policies/${authPolicyId}` };
  return links;
}
