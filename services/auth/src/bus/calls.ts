import type { AuthStores, UnitOfWork } from '../domain/ports.ts';

export interface AuthCallDeps {
  work: UnitOfWork;
}

/**
 * Service-to-service calls auth serves on `ziti.rpc.auth.call.<action>` (credentials created by
 * enrollment, identities created by CA auto-enrollment, …). Shapes are in packages/contracts.
 */
export function authCalls(_deps: AuthCallDeps): Record<string, (payload: unknown) => Promise<unknown>> {
  return {};
}

export type { AuthStores };
