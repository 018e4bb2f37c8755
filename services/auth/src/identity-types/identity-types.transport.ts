import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { IdentityTypeService } from './identity-types.domain.ts';
import { identityTypeDetail } from './identity-types.mapper.ts';

export interface IdentityTypeOperationDeps {
  identityTypes: IdentityTypeService;
}

/** Identity types (management, read only). */
export function identityTypeOperations(deps: IdentityTypeOperationDeps) {
  const { identityTypes } = deps;
  return {
    'management.listIdentityTypes': async (req) =>
      pageReply(await identityTypes.list(listInputOf(req)), identityTypeDetail),
    'management.detailIdentityType': async (req) =>
      reply.ok(identityTypeDetail(await identityTypes.get(pathIdOf(req)))),
  } satisfies Partial<OperationHandlers<'auth'>>;
}
