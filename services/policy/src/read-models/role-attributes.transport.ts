import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, listInputOf, pageReply } from '@ziti/platform';
import type { RoleAttributeService } from './role-attributes.domain.ts';
import type { RoleAttributeSource } from './role-attributes.ports.ts';

/** `/…-role-attributes`: the distinct attributes of the live entities of a read model (ZITI-FACTS §3.4). */
function roleAttributes(service: () => RoleAttributeService, of: RoleAttributeSource) {
  return async (req: OperationRequest) => {
    const { filter } = listInputOf(req);
    const page = await service().list(of, filter);
    // As the reference: no `filterableFields` on these lists.
    return pageReply({ ...page, filterableFields: [] });
  };
}

/** `/identity-role-attributes`, `/service-role-attributes`, `/edge-router-role-attributes`. */
export function roleAttributeOperations(attributes: () => RoleAttributeService) {
  return {
    'management.listIdentityRoleAttributes': roleAttributes(attributes, 'identities'),
    'management.listServiceRoleAttributes': roleAttributes(attributes, 'services'),
    'management.listEdgeRouterRoleAttributes': roleAttributes(attributes, 'edgeRouters'),
  } satisfies OperationHandlersPart<'policy'>;
}
