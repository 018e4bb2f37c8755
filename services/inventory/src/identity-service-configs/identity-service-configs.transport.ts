import { type OperationHandlers, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { IdentityServiceConfigService } from './identity-service-configs.domain.ts';
import { serviceConfigDetail } from './identity-service-configs.mapper.ts';

/** An identity's service configs (`/identities/{id}/service-configs`). */
export function identityServiceConfigOperations(deps: { identityServiceConfigs: IdentityServiceConfigService }) {
  const { identityServiceConfigs } = deps;
  return {
    'management.listIdentitysServiceConfigs': async (req) => {
      const list = await identityServiceConfigs.list(pathIdOf(req));
      const data = list.map((l) => serviceConfigDetail(l, { service: l.service?.name, config: l.config?.name }));
      // Not paged: every pair at once.
      return pageReply({ items: data, totalCount: data.length, pagination: { limit: data.length, offset: 0 } });
    },
    'management.associateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.associate(pathIdOf(req), req.body);
      return reply.empty();
    },
    'management.disassociateIdentitysServiceConfigs': async (req) => {
      await identityServiceConfigs.disassociate(pathIdOf(req), req.body ?? []);
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'inventory'>>;
}
