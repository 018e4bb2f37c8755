import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { ExternalJwtSignerService } from './external-jwt-signers.domain.ts';
import { clientExternalJwtSignerDetail, externalJwtSignerDetail } from './external-jwt-signers.mapper.ts';

export interface ExternalJwtSignerOperationDeps {
  signers: ExternalJwtSignerService;
}

/** External JWT signers (management), and the client API's anonymous listing. */
export function externalJwtSignerOperations(deps: ExternalJwtSignerOperationDeps) {
  return {
    // Anonymous on the client API: only signers a client can start a login with, in their short form.
    'client.listExternalJwtSigners': async (req) =>
      pageReply(await deps.signers.listForClients(listInputOf(req)), clientExternalJwtSignerDetail),

    'management.listExternalJwtSigners': async (req) =>
      pageReply(await deps.signers.list(listInputOf(req)), externalJwtSignerDetail),
    'management.createExternalJwtSigner': async (req) =>
      reply.created((await deps.signers.create(req.body)).id, 'external-jwt-signers'),
    'management.detailExternalJwtSigner': async (req) =>
      reply.ok(externalJwtSignerDetail(await deps.signers.get(pathIdOf(req)))),
    'management.updateExternalJwtSigner': async (req) => {
      await deps.signers.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchExternalJwtSigner': async (req) => {
      await deps.signers.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteExternalJwtSigner': async (req) => {
      await deps.signers.delete(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
