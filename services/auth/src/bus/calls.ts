import {
  ApiError,
  authCallNames,
  authenticatorIdRequestSchema,
  createAuthenticatorRequestSchema,
  createIdentityRequestSchema,
  getIdentitiesRequestSchema,
  replaceCertificateRequestSchema,
  stageCertificateRequestSchema,
} from '@ziti/contracts';
import type { z } from 'zod';
import type { CredentialService } from '../domain/credential-service.ts';
import type { AuthStores, UnitOfWork } from '../domain/ports.ts';

export interface AuthCallDeps {
  work: UnitOfWork;
  credentials: CredentialService;
}

function parse<T>(schema: z.ZodType<T>, payload: unknown, action: string): T {
  const parsed = schema.safeParse(payload);
  if (!parsed.success) {
    throw new ApiError('COULD_NOT_VALIDATE', {
      code: 'COULD_NOT_VALIDATE',
      message: `malformed ${action} request: ${parsed.error.issues[0]?.message ?? ''}`,
    });
  }
  return parsed.data;
}

/**
 * Service-to-service calls auth serves on `ziti.rpc.auth.call.<action>` (credentials created by
 * enrollment, identities created by CA auto-enrollment, …). Shapes are in packages/contracts.
 */
export function authCalls(deps: AuthCallDeps): Record<string, (payload: unknown) => Promise<unknown>> {
  const { credentials } = deps;
  return {
    [authCallNames.createAuthenticator]: async (payload) =>
      credentials.createAuthenticator(
        parse(createAuthenticatorRequestSchema, payload, authCallNames.createAuthenticator),
      ),
    [authCallNames.getAuthenticator]: async (payload) =>
      credentials.getAuthenticator(parse(authenticatorIdRequestSchema, payload, authCallNames.getAuthenticator).id),
    [authCallNames.stageCertificate]: async (payload) => {
      await credentials.stageCertificate(parse(stageCertificateRequestSchema, payload, authCallNames.stageCertificate));
      return {};
    },
    [authCallNames.replaceCertificate]: async (payload) => {
      await credentials.replaceCertificate(
        parse(replaceCertificateRequestSchema, payload, authCallNames.replaceCertificate),
      );
      return {};
    },
    [authCallNames.deleteAuthenticator]: async (payload) => {
      await credentials.deleteAuthenticator(
        parse(authenticatorIdRequestSchema, payload, authCallNames.deleteAuthenticator).id,
      );
      return {};
    },
    [authCallNames.getIdentities]: async (payload) => ({
      identities: await credentials.identities(
        parse(getIdentitiesRequestSchema, payload, authCallNames.getIdentities).ids,
      ),
    }),
    [authCallNames.createIdentity]: async (payload) =>
      credentials.createIdentity(parse(createIdentityRequestSchema, payload, authCallNames.createIdentity)),
  };
}

export type { AuthStores };
