import { authenticationEventTypes, eventTypes, publishedEvent } from '@ziti/contracts';
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
