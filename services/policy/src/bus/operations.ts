import { type OperationRequest, listEnvelope } from '@ziti/contracts';
import type { Db, OperationHandlers } from '@ziti/platform';
import { reply } from '@ziti/platform';
import type { IdentityReadModel } from '../domain/ports.ts';

export interface PolicyOperationDeps {
  db: Db;
  identities: (db: Db) => IdentityReadModel;
}

const filterOf = (req: OperationRequest) => {
  const f = req.query.filter;
  return f === undefined || f === null ? undefined : String(Array.isArray(f) ? f[0] : f);
};

/** The operations this service implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function policyOperations(deps: PolicyOperationDeps = {} as PolicyOperationDeps): OperationHandlers {
  return {
    'management.listIdentityRoleAttributes': async (req) => {
      const filter = filterOf(req);
      const page = await deps.identities(deps.db).roleAttributes(filter === undefined ? {} : { filter });
      return reply.json(listEnvelope(page.items, { ...page.pagination, totalCount: page.totalCount }));
    },
  };
}
