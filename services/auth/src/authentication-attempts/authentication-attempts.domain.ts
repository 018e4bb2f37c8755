import { ApiError, type AuthenticationAttemptState } from '@ziti/contracts';
import { dependencyUnavailableError, unavailableDependency } from '@ziti/platform/unavailable';
import type { Identity } from '../shared/model.domain.ts';
import type { AuthenticationAttempt } from './authentication-attempts.ports.ts';

/**
 * What a login learned about who was trying, as it went: set once the attempt is tied to an
 * identity (its authenticator, its certificate or its JWT's claim was found). A username that
 * matched nothing leaves it empty, so the attempt records no identity (and never what was typed).
 */
export interface AttemptSubject {
  identity?: Pick<Identity, 'id' | 'name'>;
  /** The authenticator used (empty for a certificate found through a CA's externalIdClaim, and for ext-jwt). */
  authenticatorId?: string;
}

/** The error code the caller receives for `err`, as the operation's reply gives it (reply.ts). */
export function failureReason(err: unknown): string {
  if (err instanceof ApiError) return err.code;
  const dependency = unavailableDependency(err);
  return dependency ? dependencyUnavailableError(dependency).code : 'UNHANDLED';
}

/** The identity fields of an attempt, from what the login learned. */
export function subjectFields(
  subject: AttemptSubject,
): Pick<AuthenticationAttempt, 'identityId' | 'identityName' | 'authenticatorId'> {
  return {
    ...(subject.identity ? { identityId: subject.identity.id, identityName: subject.identity.name } : {}),
    ...(subject.authenticatorId ? { authenticatorId: subject.authenticatorId } : {}),
  };
}

const optionalFields = ['identityId', 'identityName', 'authenticatorId', 'apiSessionId', 'reason'] as const;

/** The state of `authentication.attempted` for an attempt: its fields by name, nothing else that came along. */
export function attemptState(attempt: AuthenticationAttempt): AuthenticationAttemptState {
  const state: AuthenticationAttemptState = {
    method: attempt.method,
    outcome: attempt.outcome,
    at: attempt.at.toISOString(),
  };
  for (const field of optionalFields) {
    const value = attempt[field];
    if (typeof value === 'string' && value !== '') state[field] = value;
  }
  return state;
}
