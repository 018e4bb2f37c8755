import type { OperationRequest } from '@ziti/contracts';
import {
  type OperationHandlersPart,
  callerOf,
  firstQueryValue,
  listInputOf,
  pageReply,
  pathIdOf,
  reply,
  roleFilterOf,
} from '@ziti/platform';
import type { ServiceViewService, Viewer } from './service-view.domain.ts';
import { serviceViewDetail } from './services.mapper.ts';

/** The caller whose view a service read is; the gateway lets no anonymous caller reach these. */
export function viewerOf(req: OperationRequest): Viewer {
  const { identityId, isAdmin, apiSessionId, configTypes } = callerOf(req);
  return { identityId, isAdmin, apiSessionId, ...(configTypes ? { sessionConfigTypes: configTypes } : {}) };
}

/**
 * `configTypes` (ZITI-FACTS §3.4): repeated values on the client API; the management API reads only
 * the first value and splits it on commas, as the reference does.
 */
function configTypesOf(req: OperationRequest): string[] | undefined {
  const raw = req.query.configTypes;
  // Not given on the client API: the API session's own apply (the domain reads them).
  if (req.api === 'client' && (raw === undefined || (Array.isArray(raw) && raw.length === 0))) return undefined;
  const values = req.api === 'management' ? [firstQueryValue(raw)] : Array.isArray(raw) ? raw : [raw];
  return values
    .filter((v): v is string => typeof v === 'string')
    .flatMap((v) => (req.api === 'management' ? v.split(',') : [v]))
    .map((v) => v.trim())
    .filter(Boolean);
}

/**
 * Service reads with the caller's permissions, configs and posture queries: the client API's
 * `/services` and `/services/{id}`, and the management API's (moved here from inventory: only policy
 * knows the caller's access; see the owner corrections in packages/contracts/scripts/generate.ts).
 */
export function serviceOperations(views: () => ServiceViewService) {
  const list = async (req: OperationRequest) => {
    const roleFilter = roleFilterOf(req);
    // Undocumented on the management API and honoured there only (ZITI-FACTS §3.4); empty is absent.
    const asIdentity = req.api === 'management' ? firstQueryValue(req.query.asIdentity) : undefined;
    const page = await views().list(
      viewerOf(req),
      listInputOf(req),
      configTypesOf(req),
      { ...(roleFilter ? { roleFilter } : {}), ...(asIdentity ? { asIdentity } : {}) },
      // The client API's reads may be kept by the gateway until an event changes them (docs/adr/0015).
      { reflecting: req.api === 'client' },
    );
    const answer = pageReply(page, serviceViewDetail);
    return page.reflects ? { ...answer, reflects: page.reflects } : answer;
  };
  const detail = async (req: OperationRequest) => {
    const { view, reflects } = await views().get(viewerOf(req), pathIdOf(req), configTypesOf(req), {
      reflecting: req.api === 'client',
    });
    const answer = reply.ok(serviceViewDetail(view));
    return reflects ? { ...answer, reflects } : answer;
  };
  return {
    'client.listServices': list,
    'client.detailService': detail,
    'management.listServices': list,
    'management.detailService': detail,
    'management.listConfigServices': async (req) =>
      pageReply(await views().listForConfig(viewerOf(req), pathIdOf(req), listInputOf(req)), serviceViewDetail),
    'client.listServiceUpdates': async (req) =>
      reply.ok({ lastChangeAt: (await views().lastChangeAt(viewerOf(req))).toISOString() }),
  } satisfies OperationHandlersPart<'policy'>;
}
