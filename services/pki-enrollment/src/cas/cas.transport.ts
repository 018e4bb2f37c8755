import { type OperationHandlers, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { CaService } from './cas.domain.ts';
import { caDetail } from './cas.mapper.ts';

/** The operations on third-party CAs. */
export function caOperations(deps: { cas: CaService }) {
  const { cas } = deps;
  return {
    'management.listCas': async (req) => pageReply(await cas.list(listInputOf(req)), caDetail),
    'management.createCa': async (req) => reply.created((await cas.create(req.body)).id, 'cas'),
    'management.detailCa': async (req) => reply.ok(caDetail(await cas.get(pathIdOf(req)))),
    'management.updateCa': async (req) => {
      await cas.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchCa': async (req) => {
      await cas.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteCa': async (req) => {
      await cas.delete(pathIdOf(req));
      return reply.empty();
    },
    'management.getCaJwt': async (req) => reply.raw('application/jwt', await cas.jwt(pathIdOf(req))),
    'management.verifyCa': async (req) => {
      // The reference reads the body as text/plain PEM; a JSON string body is read the same way.
      const pem = req.rawBody !== undefined ? Buffer.from(req.rawBody, 'base64').toString('utf8') : (req.body ?? '');
      await cas.verify(pathIdOf(req), pem);
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'pki-enrollment'>>;
}
