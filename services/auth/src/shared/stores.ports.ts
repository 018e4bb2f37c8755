import type { ApiSessionStore } from '@ziti/platform/sessions/api-session-store';
import type { EventSink } from '@ziti/platform/event-sink';
import type { LoginAttemptStore } from '../api-sessions/api-sessions.ports.ts';
import type { AuthPolicyStore } from '../auth-policies/auth-policies.ports.ts';
import type { AuthenticatorStore } from '../authenticators/authenticators.ports.ts';
import type { ExternalJwtSignerStore } from '../external-jwt-signers/external-jwt-signers.ports.ts';
import type { IdentityStore } from '../identities/identities.ports.ts';
import type { IdentityTraceStore } from '../identity-traces/identity-traces.ports.ts';
import type { IdentityTypeStore } from '../identity-types/identity-types.ports.ts';
import type { MfaStore } from '../mfas/mfas.ports.ts';

/** The stores of one transaction and the events that leave with it. */
export interface AuthStores {
  identities: IdentityStore;
  authenticators: AuthenticatorStore;
  authPolicies: AuthPolicyStore;
  identityTypes: IdentityTypeStore;
  extJwtSigners: ExternalJwtSignerStore;
  mfa: MfaStore;
  loginAttempts: LoginAttemptStore;
  traces: IdentityTraceStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: AuthStores) => Promise<T>) => Promise<T>;

export type SessionStore = ApiSessionStore;
