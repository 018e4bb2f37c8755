import {
  ApiError,
  clientServiceTerminatorsRequestSchema,
  inventoryCallNames,
  listEnvelope,
  routerByFingerprintRequestSchema,
  routerCertificateChangedRequestSchema,
  routerEnrolledRequestSchema,
  routerEnrollmentActions,
} from '@ziti/contracts';
import type { z } from 'zod';
import type { RouterService } from '../domain/routers.ts';
import type { ServiceCatalog } from '../domain/services.ts';
import type { TerminatorService } from '../domain/terminators.ts';
import { terminatorClientDetail } from './mappers.ts';

function parse<T>(schema: z.ZodType<T>, payload: unknown, action: string): T {
  const parsed = schema.safeParse(payload);
  if (!parsed.success)
    throw new ApiError('COULD_NOT_VALIDATE', { code: 'UNHANDLED', message: `malformed ${action} request` });
  return parsed.data;
}

/**
 * Calls inventory serves on `ziti.rpc.inventory.call.<action>` for pki-enrollment, which enrolls
 * routers and extends their certificates (shapes in packages/contracts).
 */
export function inventoryCalls(
  routers: RouterService,
  terminators: TerminatorService,
  services: ServiceCatalog,
): Record<string, (payload: unknown) => Promise<unknown>> {
  return {
    // policy asks once it found the service visible to the caller (client listServiceTerminators).
    [inventoryCallNames.clientServiceTerminators]: async (payload) => {
      const { serviceId, list } = parse(
        clientServiceTerminatorsRequestSchema,
        payload,
        inventoryCallNames.clientServiceTerminators,
      );
      const page = await terminators.listForService(serviceId, list);
      const name = (await services.get(serviceId)).name;
      return listEnvelope(
        page.items.map((t) => terminatorClientDetail(t, name)),
        { ...page.pagination, totalCount: page.totalCount },
        page.filterableFields,
      );
    },
    [routerEnrollmentActions.enrolled]: async (payload) => {
      await routers.markEnrolled(parse(routerEnrolledRequestSchema, payload, routerEnrollmentActions.enrolled));
      return {};
    },
    [routerEnrollmentActions.byFingerprint]: async (payload) => {
      const { fingerprint } = parse(routerByFingerprintRequestSchema, payload, routerEnrollmentActions.byFingerprint);
      const router = await routers.byFingerprint(fingerprint);
      return {
        router: router ? { id: router.id, name: router.name, kind: router.kind, isVerified: router.isVerified } : null,
      };
    },
    [routerEnrollmentActions.certificateChanged]: async (payload) => {
      await routers.changeCertificate(
        parse(routerCertificateChangedRequestSchema, payload, routerEnrollmentActions.certificateChanged),
      );
      return {};
    },
  };
}
