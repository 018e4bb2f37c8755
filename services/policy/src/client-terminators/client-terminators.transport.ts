import { type OperationHandlersPart, callerOf, listInputOf, pathIdOf, reply } from '@ziti/platform';
import type { ClientTerminators } from './client-terminators.domain.ts';

/** Client `GET /services/{id}/terminators`: a service's terminators, if the caller may see the service. */
export function clientTerminatorOperations(deps: () => { clientTerminators: ClientTerminators }) {
  return {
    'client.listServiceTerminators': async (req) => {
      const { identityId, isAdmin } = callerOf(req);
      return reply.json(await deps().clientTerminators.list({ identityId, isAdmin }, pathIdOf(req), listInputOf(req)));
    },
  } satisfies OperationHandlersPart<'policy'>;
}
