import {
  ApiError,
  calls,
  createIdentityEnrollmentsRequestSchema,
  deleteIdentityEnrollmentsRequestSchema,
  pendingEnrollmentsRequestSchema,
  pkiCallNames,
  verifyClientCertificateRequestSchema,
} from '@ziti/contracts';
import type { z } from 'zod';
import type { CaService } from '../domain/ca-service.ts';
import type { ControllerPkiService } from '../domain/controller-pki.ts';
import type { EnrollmentService } from '../domain/enrollment-service.ts';

export interface PkiCallDeps {
  pki: ControllerPkiService;
  cas: CaService;
  enrollments: EnrollmentService;
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

/** Service-to-service calls pki-enrollment serves on `ziti.rpc.pki-enrollment.call.<action>` (shapes in contracts). */
export function pkiCalls(deps: PkiCallDeps): Record<string, (payload: unknown) => Promise<unknown>> {
  const { pki, cas, enrollments } = deps;
  return {
    [calls.serverIdentity]: async () => pki.serverIdentity(),
    [pkiCallNames.verifyClientCertificate]: async (payload) => {
      const { chainPem } = parse(verifyClientCertificateRequestSchema, payload, 'verifyClientCertificate');
      return cas.verifyClientCertificate(chainPem);
    },
    [pkiCallNames.pendingEnrollments]: async (payload) => {
      const { identityIds } = parse(pendingEnrollmentsRequestSchema, payload, 'pendingEnrollments');
      return { enrollments: await enrollments.pendingFor(identityIds) };
    },
    [pkiCallNames.createIdentityEnrollments]: async (payload) => {
      const request = parse(createIdentityEnrollmentsRequestSchema, payload, 'createIdentityEnrollments');
      return { ids: await enrollments.createForIdentity(request.identityId, request.enrollments) };
    },
    [pkiCallNames.deleteIdentityEnrollments]: async (payload) => {
      const request = parse(deleteIdentityEnrollmentsRequestSchema, payload, 'deleteIdentityEnrollments');
      return { ids: await enrollments.deleteForIdentity(request.identityId, request.ids) };
    },
  };
}
