import { ApiError, type OperationReply, type OperationRequest } from '@ziti/contracts';
import { type OperationHandler, type OperationHandlers, listInputOf, reply } from '@ziti/platform';
import type { AuthPolicyInput, AuthPolicyService } from '../domain/auth-policy-service.ts';
import type { AuthenticationService } from '../domain/authentication-service.ts';
import type { AuthenticatorInput, AuthenticatorService } from '../domain/authenticator-service.ts';
import type { ControllerService } from '../domain/controller-service.ts';
import type { ExternalJwtSignerInput } from '../domain/ext-jwt-signer.ts';
import type { ExternalJwtSignerService } from '../domain/ext-jwt-signer-service.ts';
import type { IdentityService } from '../domain/identity-service.ts';
import type { IdentityTraceService, TraceSpecInput } from '../domain/identity-trace-service.ts';
import type { MfaService } from '../domain/mfa-service.ts';
import type { Authenticator, ListPage } from '../domain/model.ts';
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
  listPage: <T, W>(p: ListPage<T>, map: (items: T[]) => Promise<W[]> | W[]) => Promise<OperationReply>;
  authenticatorDetails: (list: Authenticator[]) => Promise<unknown[]>;
}

function callerOf(req: OperationRequest) {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return req.caller;
}

const body = <T>(req: OperationRequest) => (req.body ?? {}) as T;
const idOf = (req: OperationRequest) => req.params.id ?? '';
/** An MFA code from the body (`{code}`) or, where the spec allows, the `mfa-validation-code` header. */
const codeOf = (req: OperationRequest, header = false) => {
  const fromBody = (req.body as { code?: unknown } | undefined)?.code;
  if (typeof fromBody === 'string' && fromBody !== '') return fromBody;
  return header ? req.headers['mfa-validation-code'] : typeof fromBody === 'string' ? fromBody : undefined;
};

/**
 * The operations of the authentication issue: the current identity's authenticators and MFA,
 * `/authenticate/mfa`, auth policies, external JWT signers, identity MFA removal and tracing,
 * `/controllers`. Keyed `<api>.<operationId>`.
 */
export function authenticationOperations(
  deps: AuthenticationOperationDeps,
  helpers: OperationHelpers,
): OperationHandlers {
  const { listPage, authenticatorDetails } = helpers;
  const handlers: OperationHandlers = {};

  const own: Record<string, OperationHandler> = {
    listCurrentIdentityAuthenticators: async (req) =>
      listPage(await deps.authenticators.listOwn(callerOf(req).identityId, listInputOf(req)), authenticatorDetails),
    detailCurrentIdentityAuthenticator: async (req) =>
      reply.ok(
        (await authenticatorDetails([await deps.authenticators.getOwn(callerOf(req).identityId, idOf(req))]))[0],
      ),
    updateCurrentIdentityAuthenticator: async (req) => {
      await deps.authenticators.updateOwn(
        callerOf(req).identityId,
        idOf(req),
        body<AuthenticatorInput>(req),
        'replace',
      );
      return reply.empty();
    },
    patchCurrentIdentityAuthenticator: async (req) => {
      await deps.authenticators.updateOwn(callerOf(req).identityId, idOf(req), body<AuthenticatorInput>(req), 'patch');
      return reply.empty();
    },

    detailMfa: async (req) => {
      const who = callerOf(req);
      const record = await deps.mfa.get(who.identityId);
      const identity = await deps.identities.get(who.identityId);
      return reply.ok(mfaDetail(record, deps.mfa.provisioningUrl(identity.name, record.secret)));
    },
    enrollMfa: async (req) => {
      const record = await deps.mfa.enroll(callerOf(req).identityId);
      return {
        status: 201,
        body: { data: { id: record.id, _links: { self: { href: './current-identity/mfa' } } }, meta: {} },
      };
    },
    verifyMfa: async (req) => {
      const who = callerOf(req);
      await deps.mfa.verify(who.identityId, who.apiSessionId, codeOf(req) ?? '');
      return reply.empty();
    },
    detailMfaQrCode: async (req) => {
      const who = callerOf(req);
      const identity = await deps.identities.get(who.identityId);
      return reply.raw('image/png', await deps.mfa.qrCode(who.identityId, identity.name));
    },
    deleteMfa: async (req) => {
      await deps.mfa.remove(callerOf(req).identityId, req.headers['mfa-validation-code']);
      return reply.empty();
    },
    detailMfaRecoveryCodes: async (req) =>
      reply.ok(mfaRecoveryCodesDetail(await deps.mfa.recoveryCodes(callerOf(req).identityId, codeOf(req, true)))),
    createMfaRecoveryCodes: async (req) => {
      await deps.mfa.regenerateRecoveryCodes(callerOf(req).identityId, codeOf(req) ?? '');
      return reply.empty();
    },
    authenticateMfa: async (req) => {
      const who = callerOf(req);
      await deps.mfa.authenticate(who.identityId, who.apiSessionId, codeOf(req) ?? '');
      return reply.empty();
    },

    listControllers: async (req) =>
      listPage(await deps.controllers.list(listInputOf(req)), (items) => items.map(controllerDetail)),
  };
  for (const api of ['client', 'management'] as const) {
    for (const [operationId, handler] of Object.entries(own)) handlers[`${api}.${operationId}`] = handler;
  }

  // Anonymous on the client API: only signers a client can start a login with, in their short form.
  handlers['client.listExternalJwtSigners'] = async (req) =>
    listPage(await deps.signers.listForClients(listInputOf(req)), (items) => items.map(clientExternalJwtSignerDetail));

  Object.assign(handlers, {
    'management.listAuthPolicies': async (req: OperationRequest) =>
      listPage(await deps.authPolicies.list(listInputOf(req)), (items) => items.map(authPolicyDetail)),
    'management.createAuthPolicy': async (req: OperationRequest) =>
      reply.created((await deps.authPolicies.create(body<AuthPolicyInput>(req))).id, 'auth-policies'),
    'management.detailAuthPolicy': async (req: OperationRequest) =>
      reply.ok(authPolicyDetail(await deps.authPolicies.get(idOf(req)))),
    'management.updateAuthPolicy': async (req: OperationRequest) => {
      await deps.authPolicies.update(idOf(req), body<AuthPolicyInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchAuthPolicy': async (req: OperationRequest) => {
      await deps.authPolicies.update(idOf(req), body<AuthPolicyInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteAuthPolicy': async (req: OperationRequest) => {
      await deps.authPolicies.delete(idOf(req));
      return reply.empty();
    },

    'management.listExternalJwtSigners': async (req: OperationRequest) =>
      listPage(await deps.signers.list(listInputOf(req)), (items) => items.map(externalJwtSignerDetail)),
    'management.createExternalJwtSigner': async (req: OperationRequest) =>
      reply.created((await deps.signers.create(body<ExternalJwtSignerInput>(req))).id, 'external-jwt-signers'),
    'management.detailExternalJwtSigner': async (req: OperationRequest) =>
      reply.ok(externalJwtSignerDetail(await deps.signers.get(idOf(req)))),
    'management.updateExternalJwtSigner': async (req: OperationRequest) => {
      await deps.signers.update(idOf(req), body<ExternalJwtSignerInput>(req), 'replace');
      return reply.empty();
    },
    'management.patchExternalJwtSigner': async (req: OperationRequest) => {
      await deps.signers.update(idOf(req), body<ExternalJwtSignerInput>(req), 'patch');
      return reply.empty();
    },
    'management.deleteExternalJwtSigner': async (req: OperationRequest) => {
      await deps.signers.delete(idOf(req));
      return reply.empty();
    },

    'management.removeIdentityMfa': async (req: OperationRequest) => {
      await deps.mfa.removeForIdentity(idOf(req));
      return reply.empty();
    },
    'management.updateIdentityTracing': async (req: OperationRequest) =>
      reply.ok(traceDetail(await deps.traces.set(idOf(req), body<TraceSpecInput>(req)))),
  });
  return handlers;
}
