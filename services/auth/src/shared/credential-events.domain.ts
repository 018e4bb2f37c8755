import { type AuthPolicyState, type AuthenticatorState, eventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type { AuthPolicy } from '../auth-policies/auth-policy.domain.ts';
import type { Authenticator } from './model.domain.ts';

/** What auth publishes of an authenticator: never its password hash, salt or certificate. */
export type AuthenticatorFacts = Pick<
  Authenticator,
  'id' | 'identityId' | 'method' | 'username' | 'certFingerprint' | 'createdAt' | 'updatedAt'
>;

export function authenticatorState(a: AuthenticatorFacts): AuthenticatorState {
  return {
    id: a.id,
    identityId: a.identityId,
    method: a.method,
    username: a.username,
    certFingerprint: a.certFingerprint,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}

/** `authenticator.created|updated|deleted` (the last state), in the unit of work that writes it. */
export async function emitAuthenticator(
  events: EventSink,
  kind: 'authenticatorCreated' | 'authenticatorUpdated' | 'authenticatorDeleted',
  a: AuthenticatorFacts,
): Promise<void> {
  const t = eventTypes[kind];
  await events.emit(t, authenticatorState(a));
}

export function authPolicyState(p: AuthPolicy): AuthPolicyState {
  return {
    id: p.id,
    name: p.name,
    isSystem: p.isSystem,
    primary: p.primary as unknown as Record<string, unknown>,
    secondary: p.secondary as unknown as Record<string, unknown>,
    tags: p.tags,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

/** `authPolicy.created|updated|deleted` (the last state), in the unit of work that writes it. */
export async function emitAuthPolicy(
  events: EventSink,
  kind: 'authPolicyCreated' | 'authPolicyUpdated' | 'authPolicyDeleted',
  p: AuthPolicy,
): Promise<void> {
  const t = eventTypes[kind];
  await events.emit(t, authPolicyState(p));
}
