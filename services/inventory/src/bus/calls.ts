import { inventoryCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers, pageEnvelope } from '@ziti/platform';
import type { RouterService } from '../domain/routers.ts';
import type { ServiceCatalog } from '../domain/services.ts';
import type { TerminatorService } from '../domain/terminators.ts';
import { terminatorClientDetail } from './mappers.ts';

/**
 * Calls inventory serves on `ziti.rpc.inventory.call.<action>`: for policy, a service's terminators
 * as the client API shows them; for pki-enrollment, which enrolls routers and extends their
 * certificates (contracts in packages/contracts/src/service-calls.ts).
 */
export function inventoryCalls(
  routers: RouterService,
  terminators: TerminatorService,
  services: ServiceCatalog,
): CallTable {
  return callHandlers(inventoryCallContracts, {
    // policy asks once it found the service visible to the caller (client listServiceTerminators).
    clientServiceTerminators: async ({ serviceId, list }) => {
      const page = await terminators.listForService(serviceId, list);
      const name = (await services.get(serviceId)).name;
      return pageEnvelope(page, (t) => terminatorClientDetail(t, name));
    },
    routerEnrolled: async (request) => {
      await routers.markEnrolled(request);
      return {};
    },
    routerByFingerprint: async ({ fingerprint }) => {
      const router = await routers.byFingerprint(fingerprint);
      return {
        router: router ? { id: router.id, name: router.name, kind: router.kind, isVerified: router.isVerified } : null,
      };
    },
    routerCertificateChanged: async (request) => {
      await routers.changeCertificate(request);
      return {};
    },
  });
}
