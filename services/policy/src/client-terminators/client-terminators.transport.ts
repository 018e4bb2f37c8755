import { type OperationHandlersPart, callerOf, listInputOf, reply } from '@ziti/platform';
import { pathId } from '../shared/request-params.transport.ts';
import type { ClientTerminators } from './client-terminators.domain.ts';

/** Client `GET /services/{id}/terminators`: a service's terminators, if the caller may see the service. */
export function clientTerminatorOperations(deps: () => { clientTerminators: ClientTerminators }) {
  return {
    'client.listServiceTerminators': async (req) => {
      const { identityId, isAdmin } = callerOf(req);
      return reply.json(await deps().clientTerminators.list({ identityId, isAdmin }, pathId(req), listInputOf(req)));
    },
  } satisfies OperationHandlersPart<'policy'>;
}
