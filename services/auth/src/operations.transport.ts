import type { OperationHandlers } from '@ziti/platform';
import { type ApiSessionOperationDeps, apiSessionOperations } from './api-sessions/api-sessions.transport.ts';
import { type AuthPolicyOperationDeps, authPolicyOperations } from './auth-policies/auth-policies.transport.ts';
import { type AuthenticatorOperationDeps, authenticatorOperations } from './authenticators/authenticators.transport.ts';
import { type ControllerOperationDeps, controllerOperations } from './controllers/controllers.transport.ts';
import {
  type ExternalJwtSignerOperationDeps,
  externalJwtSignerOperations,
} from './external-jwt-signers/external-jwt-signers.transport.ts';
import { type IdentityOperationDeps, identityOperations } from './identities/identities.transport.ts';
import {
  type IdentityTraceOperationDeps,
  identityTraceOperations,
} from './identity-traces/identity-traces.transport.ts';
import { type IdentityTypeOperationDeps, identityTypeOperations } from './identity-types/identity-types.transport.ts';
import { type MfaOperationDeps, mfaOperations } from './mfas/mfas.transport.ts';

/** The identity, authenticator, API-session and identity-type operations' dependencies. */
export type AuthOperationDeps = IdentityOperationDeps &
  AuthenticatorOperationDeps &
  ApiSessionOperationDeps &
  IdentityTypeOperationDeps;

/**
 * The dependencies of the authentication issue's operations: the current identity's MFA, auth
 * policies, external JWT signers, identity tracing, `/controllers`.
 */
export type AuthenticationOperationDeps = MfaOperationDeps &
  AuthPolicyOperationDeps &
  ExternalJwtSignerOperationDeps &
  IdentityTraceOperationDeps &
  ControllerOperationDeps;

export type AllAuthOperationDeps = AuthOperationDeps & AuthenticationOperationDeps;

/**
 * Every operation auth owns, keyed `<api>.<operationId>`, merged from each resource's slice (the
 * compiler checks the table names each one).
 */
export function authOperations(deps: AllAuthOperationDeps): OperationHandlers<'auth'> {
  return {
    ...apiSessionOperations(deps),
    ...identityOperations(deps),
    ...authenticatorOperations(deps),
    ...identityTypeOperations(deps),
    ...mfaOperations(deps),
    ...authPolicyOperations(deps),
    ...externalJwtSignerOperations(deps),
    ...identityTraceOperations(deps),
    ...controllerOperations(deps),
  };
}
