import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, callerOf, pathIdOf, reply } from '@ziti/platform';
import type { IdentityService } from '../identities/identities.domain.ts';
import type { MfaService } from './mfas.domain.ts';
import { mfaDetail, mfaRecoveryCodesDetail } from './mfas.mapper.ts';

export interface MfaOperationDeps {
  mfa: MfaService;
  /** Names the identity in the TOTP provisioning URL and QR code. */
  identities: IdentityService;
}

/** The MFA operations' request: a `{code}` body (optional on `GET …/recovery-codes`, which also reads the header). */
type WithMfaCode = OperationRequest & { body: { code: string } | undefined };
/** An MFA code from the body (`{code}`) or, where the spec allows, the `mfa-validation-code` header. */
const codeOf = (req: WithMfaCode, header = false) => {
  const fromBody = req.body?.code;
  if (typeof fromBody === 'string' && fromBody !== '') return fromBody;
  return header ? req.headers['mfa-validation-code'] : typeof fromBody === 'string' ? fromBody : undefined;
};

/** The current identity's MFA (both APIs), `/authenticate/mfa`, and an administrator's removal of an identity's MFA. */
export function mfaOperations(deps: MfaOperationDeps) {
  /** The current identity's own operations, the same on both APIs. */
  const own = {
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
  };

  return {
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

    'management.removeIdentityMfa': async (req) => {
      await deps.mfa.removeForIdentity(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
