import {
  type Caller,
  authenticationEventTypes,
  eventTypes,
  inventoryEventTypes,
  policyEventTypes,
  publishedEvent,
} from '@ziti/contracts';
import type { AnswerCacheEvent } from './answer-cache.domain.ts';

/** The owners whose state a `/current-identity` answer shows: auth, and pki-enrollment's enrollments. */
export const answerSources = ['auth', 'pki-enrollment'] as const;

/** The session-scoped reads the gateway keeps, by `<api>.<operationId>`. */
export const cachedOperations = new Set(['client.getCurrentIdentity', 'management.getCurrentIdentity']);

const byIdentityId = new Set<string>([
  eventTypes.apiSessionCreated.type,
  eventTypes.apiSessionDeleted.type,
  eventTypes.apiSessionExpired.type,
  eventTypes.apiSessionMfaPassed.type,
  eventTypes.mfaCreated.type,
  eventTypes.mfaVerified.type,
  eventTypes.mfaDeleted.type,
  eventTypes.authenticatorCreated.type,
  eventTypes.authenticatorUpdated.type,
  eventTypes.authenticatorDeleted.type,
]);
const byId = new Set<string>([
  eventTypes.identityCreated.type,
  eventTypes.identityUpdated.type,
  eventTypes.identityDeleted.type,
]);
/**
 * auth's events that change no state an answer shows: the authentication attempts it reports for
 * the audit trail (docs/adr/0021), a batch every 100 ms under logins; what a login changes comes
 * with events of its own (`identity.updated`).
 */
const concernNone = new Set<string>([authenticationEventTypes.authenticationAttempted.type]);

/**
 * Which identity's answer an event can change. A login that changes the client's envInfo/sdkInfo
 * announces `identity.updated` (an older auth announced it with `apiSession.created`, still
 * followed for streams that hold it); an auth policy's name is in the answer of every identity that
 * has it; an authentication attempt changes nothing; an event this build does not know may change
 * anything.
 */
export function answerConcerns(event: AnswerCacheEvent): string | 'all' | undefined {
  const data = (event.data ?? {}) as { id?: unknown; identityId?: unknown };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  if (event.source === 'auth') {
    if (concernNone.has(event.type)) return undefined;
    if (byId.has(event.type)) return str(data.id) ?? 'all';
    if (byIdentityId.has(event.type)) return str(data.identityId) ?? 'all';
    return 'all';
  }
  if (event.source === 'pki-enrollment') {
    if (event.type.startsWith('enrollment.'))
      return data.identityId === null ? undefined : (str(data.identityId) ?? 'all');
    // CAs are not in an identity's answer; anything else unknown may be.
    return publishedEvent(event.source, event.type) ? undefined : 'all';
  }
  return undefined;
}

/**
 * The owners whose state a client service read shows (docs/adr/0015): policy, which answers it
 * (access, posture checks), and the two whose events policy's read models apply (inventory's
 * services, configs and overrides; auth's identities).
 */
export const serviceAnswerSources = ['policy', 'inventory', 'auth'] as const;

/** The client service reads the gateway keeps, by `<api>.<operationId>`. */
export const cachedServiceOperations = new Set(['client.listServices', 'client.detailService']);

/**
 * Which of the two caches keeps an operation's answer, and under which key: `/current-identity`
 * one per identity; a service read one per URL (page, filter, config types asked for), the
 * config types the API session carries (which apply when the URL names none) and the session's admin
 * flag (an administrator sees every service: a session from before the flag changed must not hand
 * that view to a newer one of the same identity). A caller without
 * them (a session from an older gateway, docs/adr/0017) is answered by policy each time.
 */
export function keptAnswerOf(
  label: string,
  caller: Caller,
  url: string,
): { cache: 'identity' | 'services'; key: string } | undefined {
  if (cachedOperations.has(label)) return { cache: 'identity', key: '' };
  if (cachedServiceOperations.has(label) && caller.configTypes)
    return { cache: 'services', key: `${caller.isAdmin ? 'admin' : 'user'}\n${url}\n${caller.configTypes.join('\n')}` };
  return undefined;
}

const policyConcernsNone = new Set<string>(
  [
    policyEventTypes.edgeRouterPolicyCreated,
    policyEventTypes.edgeRouterPolicyUpdated,
    policyEventTypes.edgeRouterPolicyDeleted,
    policyEventTypes.serviceEdgeRouterPolicyCreated,
    policyEventTypes.serviceEdgeRouterPolicyUpdated,
    policyEventTypes.serviceEdgeRouterPolicyDeleted,
  ].map((d) => d.type),
);
const inventoryConcernsAll = new Set<string>(
  [
    inventoryEventTypes.serviceCreated,
    inventoryEventTypes.serviceUpdated,
    inventoryEventTypes.serviceDeleted,
    inventoryEventTypes.configCreated,
    inventoryEventTypes.configUpdated,
    inventoryEventTypes.configDeleted,
    inventoryEventTypes.configTypeCreated,
    inventoryEventTypes.configTypeUpdated,
    inventoryEventTypes.configTypeDeleted,
  ].map((d) => d.type),
);

/**
 * Which identity's service reads an event can change. policy: an identity's access (its own, or
 * many at once), and any service policy or posture check (every identity: the posture queries
 * name the policies); router policies change no service read. inventory: a service, config or
 * config type (every identity), an identity's overrides (that one); routers and terminators
 * change none. auth: an identity (its attributes and admin flag decide its access); nothing else
 * of auth's is in a service read (the config types travel with the caller). An event this build
 * does not know may change anything.
 */
export function serviceAnswerConcerns(event: AnswerCacheEvent): string | 'all' | undefined {
  const data = (event.data ?? {}) as { id?: unknown; identityId?: unknown };
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const known = publishedEvent(event.source, event.type) !== undefined;
  if (!known) return 'all';
  if (event.source === 'policy') {
    if (event.type === policyEventTypes.identityAccessChanged.type) return str(data.identityId) ?? 'all';
    return policyConcernsNone.has(event.type) ? undefined : 'all';
  }
  if (event.source === 'inventory') {
    if (inventoryConcernsAll.has(event.type)) return 'all';
    if (event.type === inventoryEventTypes.identityServiceConfigsUpdated.type) return str(data.identityId) ?? 'all';
    return undefined;
  }
  if (event.source === 'auth') return byId.has(event.type) ? (str(data.id) ?? 'all') : undefined;
  return undefined;
}
