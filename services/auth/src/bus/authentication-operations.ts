import { ApiError, type OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, listInputOf, pageReply, reply } from '@ziti/platform';
import type { AuthPolicyService } from '../domain/auth-policy-service.ts';
import type { AuthenticationService } from '../domain/authentication-service.ts';
import type { AuthenticatorInput, AuthenticatorService } from '../domain/authenticator-service.ts';
import type { ControllerService } from '../domain/controller-service.ts';
import type { ExternalJwtSignerService } from '../domain/ext-jwt-signer-service.ts';
import type { IdentityService } from '../domain/identity-service.ts';
import type { IdentityTraceService } from '../domain/identity-trace-service.ts';
import type { MfaService } from '../domain/mfa-service.ts';
import type { Authenticator } from '../domain/model.ts';
import {
  authPolicyDetail,
  clientExternalJwtSignerDetail,
  controllerDetail,
  externalJwtSignerDetail,
  mfaDetail,
  mfaRecoveryCodesDetail,
  traceDetail,
} from './authentication-mappers.ts';

export interface AuthenticationOperationDeps {
  identities: IdentityService;
  authenticators: AuthenticatorService;
  authentication: AuthenticationService;
  authPolicies: AuthPolicyService;
  signers: ExternalJwtSignerService;
  mfa: MfaService;
  traces: IdentityTraceService;
  controllers: ControllerService;
}

export interface OperationHelpers {
  authenticatorDetails: (list: Authenticator[]) => Promise<unknown[]>;
}

function callerOf(req: OperationRequest) {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return req.caller;
}

const idOf = (req: OperationRequest) => req.params.id ?? '';
type WithBody<B> = OperationRequest & { body: B };
/** The MFA operations' request: a `{code}` body (optional on `GET …/recovery-codes`, which also reads the header). */
type WithMfaCode = OperationRequest & { body: { code: string } | undefined };
/** An MFA code from the body (`{code}`) or, where the spec allows, the `mfa-validation-code` header. */
const codeOf = (req: WithMfaCode, header = false) => {
  const fromBody = req.body?.code;
  if (typeof fromBody === 'string' && fromBody !== '') return fromBody;
  return header ? req.headers['mfa-validation-code'] : typeof fromBody === 'string' ? fromBody : undefined;
};

/**
 * The operations of the authentication issue: the current identity's authenticators and MFA,
 * `/authenticate/mfa`, auth policies, external JWT signers, identity MFA removal and tracing,
 * `/controllers`. Keyed `<api>.<operationId>`.
 */
export function authenticationOperations(deps: AuthenticationOperationDeps, helpers: OperationHelpers) {
  const { authenticatorDetails } = helpers;

  /** The current identity's own operations, the same on both APIs. */
  const own = {
    listCurrentIdentityAuthenticators: async (req: OperationRequest) => {
      const page = await deps.authenticators.listOwn(callerOf(req).identityId, listInputOf(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },
    detailCurrentIdentityAuthenticator: async (req: OperationRequest) =>
      reply.ok(
        (await authenticatorDetails([await deps.authenticators.getOwn(callerOf(req).identityId, idOf(req))]))[0],
      ),
    updateCurrentIdentityAuthenticator: async (req: WithBody<AuthenticatorInput>) => {
      await deps.authenticators.updateOwn(callerOf(req).identityId, idOf(req), req.body, 'replace');
      return reply.empty();
    },
    patchCurrentIdentityAuthenticator: async (req: WithBody<AuthenticatorInput>) => {
      await deps.authenticators.updateOwn(callerOf(req).identityId, idOf(req), req.body, 'patch');
      return reply.empty();
    },

    detailMfa: async (req: OperationRequest) => {
      const who = callerOf(req);
      const record = await deps.mfa.get(who.identityId);
      const identity = await deps.identities.get(who.identityId);
      return reply.ok(mfaDetail(record, deps.mfa.provisioningUrl(identity.name, record.secret)));
    },
    enrollMfa: async (req: OperationRequest) => {
      const record = await deps.mfa.enroll(callerOf(req).identityId);
      return {
        status: 201,
        body: { data: { id: record.id, _links: { self: { href: './current-identity/mfa' } } }, meta: {} },
      };
    },
    verifyMfa: async (req: WithMfaCode) => {
      const who = callerOf(req);
      await deps.mfa.verify(who.identityId, who.apiSessionId, codeOf(req) ?? '');
      return reply.empty();
    },
    detailMfaQrCode: async (req: OperationRequest) => {
      const who = callerOf(req);
      const identity = await deps.identities.get(who.identityId);
      return reply.raw('image/png', await deps.mfa.qrCode(who.identityId, identity.name));
    },
    deleteMfa: async (req: OperationRequest) => {
      await deps.mfa.remove(callerOf(req).identityId, req.headers['mfa-validation-code']);
      return reply.empty();
    },
    detailMfaRecoveryCodes: async (req: WithMfaCode) =>
      reply.ok(mfaRecoveryCodesDetail(await deps.mfa.recoveryCodes(callerOf(req).identityId, codeOf(req, true)))),
    createMfaRecoveryCodes: async (req: WithMfaCode) => {
      await deps.mfa.regenerateRecoveryCodes(callerOf(req).identityId, codeOf(req) ?? '');
      return reply.empty();
    },
    authenticateMfa: async (req: WithMfaCode) => {
      const who = callerOf(req);
      await deps.mfa.authenticate(who.identityId, who.apiSessionId, codeOf(req) ?? '');
      return reply.empty();
    },

    listControllers: async (req: OperationRequest) =>
      pageReply(await deps.controllers.list(listInputOf(req)), controllerDetail),
  };
  return {
    'client.listCurrentIdentityAuthenticators': own.listCurrentIdentityAuthenticators,
    'management.listCurrentIdentityAuthenticators': own.listCurrentIdentityAuthenticators,
    'client.detailCurrentIdentityAuthenticator': own.detailCurrentIdentityAuthenticator,
    'management.detailCurrentIdentityAuthenticator': own.detailCurrentIdentityAuthenticator,
    'client.updateCurrentIdentityAuthenticator': own.updateCurrentIdentityAuthenticator,
    'management.updateCurrentIdentityAuthenticator': own.updateCurrentIdentityAuthenticator,
    'client.patchCurrentIdentityAuthenticator': own.patchCurrentIdentityAuthenticator,
    'management.patchCurrentIdentityAuthenticator': own.patchCurrentIdentityAuthenticator,
    'client.detailMfa': own.detailMfa,
    'management.detailMfa': own.detailMfa,
    'client.enrollMfa': own.enrollMfa,
    'management.enrollMfa': own.enrollMfa,
    'client.verifyMfa': own.verifyMfa,
    'management.verifyMfa': own.verifyMfa,
    'client.detailMfaQrCode': own.detailMfaQrCode,
    'management.detailMfaQrCode': own.detailMfaQrCode,
    'client.deleteMfa': own.deleteMfa,
    'management.deleteMfa': own.deleteMfa,
    'client.detailMfaRecoveryCodes': own.detailMfaRecoveryCodes,
    'management.detailMfaRecoveryCodes': own.detailMfaRecoveryCodes,
    'client.createMfaRecoveryCodes': own.createMfaRecoveryCodes,
    'management.createMfaRecoveryCodes': own.createMfaRecoveryCodes,
    'client.authenticateMfa': own.authenticateMfa,
    'management.authenticateMfa': own.authenticateMfa,
    'client.listControllers': own.listControllers,
    'management.listControllers': own.listControllers,

    // Anonymous on the client API: only signers a client can start a login with, in their short form.
    'client.listExternalJwtSigners': async (req) =>
      pageReply(await deps.signers.listForClients(listInputOf(req)), clientExternalJwtSignerDetail),

    'management.listAuthPolicies': async (req) =>
      pageReply(await deps.authPolicies.list(listInputOf(req)), authPolicyDetail),
    'management.createAuthPolicy': async (req) =>
      reply.created((await deps.authPolicies.create(req.body)).id, 'auth-policies'),
    'management.detailAuthPolicy': async (req) => reply.ok(authPolicyDetail(await deps.authPolicies.get(idOf(req)))),
    'management.updateAuthPolicy': async (req) => {
      await deps.authPolicies.update(idOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchAuthPolicy': async (req) => {
      await deps.authPolicies.update(idOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteAuthPolicy': async (req) => {
      await deps.authPolicies.delete(idOf(req));
      return reply.empty();
    },

    'management.listExternalJwtSigners': async (req) =>
      pageReply(await deps.signers.list(listInputOf(req)), externalJwtSignerDetail),
    'management.createExternalJwtSigner': async (req) =>
      reply.created((await deps.signers.create(req.body)).id, 'external-jwt-signers'),
    'management.detailExternalJwtSigner': async (req) =>
      reply.ok(externalJwtSignerDetail(await deps.signers.get(idOf(req)))),
    'management.updateExternalJwtSigner': async (req) => {
      await deps.signers.update(idOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchExternalJwtSigner': async (req) => {
      await deps.signers.update(idOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteExternalJwtSigner': async (req) => {
      await deps.signers.delete(idOf(req));
      return reply.empty();
    },

    'management.removeIdentityMfa': async (req) => {
      await deps.mfa.removeForIdentity(idOf(req));
      return reply.empty();
    },
    'management.updateIdentityTracing': async (req) =>
      reply.ok(traceDetail(await deps.traces.set(idOf(req), req.body))),
  } satisfies OperationHandlersPart<'auth'>;
}
