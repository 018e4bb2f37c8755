import { ApiError, type GatewayOperationKey, buildSwaggerDocument } from '@ziti/contracts';
import { reply } from '@ziti/platform';
import type { GatewayConfig } from '../config.ts';
import type { LocalHandler } from '../pipeline/pipeline.transport.ts';
import { enumeratedCapabilities, specApi, specDetail, specList, versionData } from './informational.domain.ts';

/** The gateway's operations it answers as a stream (app.ts gives each its handler). */
export type StreamOperationKey = Extract<
  GatewayOperationKey,
  'management.exportAuditRecords' | 'management.streamEntityChangeEvents'
>;

/** The gateway's operations it answers with one reply: all the others. */
export type InformationalOperationKey = Exclude<GatewayOperationKey, StreamOperationKey>;

/** The operations the gateway answers itself with a reply (the compiler checks the table names each one). */
export function informationalHandlers(config: GatewayConfig): Record<InformationalOperationKey, LocalHandler> {
  const version: LocalHandler = async () => reply.ok(versionData(config.advertisedAddress));
  const capabilities: LocalHandler = async () => reply.ok(enumeratedCapabilities);
  const specs: LocalHandler = async () => reply.ok(specList());
  const spec: LocalHandler = async (req) => {
    const id = req.params.id ?? '';
    if (!specApi(id)) throw ApiError.notFound('spec', id);
    return reply.ok(specDetail(id as 'edge-client'));
  };
  const specBody: LocalHandler = async (req) => {
    const id = req.params.id ?? '';
    const target = specApi(id);
    if (!target) throw ApiError.notFound('spec', id);
    // The spec types the body as a string: the document travels as JSON text in `data`.
    return reply.ok(JSON.stringify(buildSwaggerDocument(target, { host: config.advertisedAddress })));
  };
  return {
    'client.listRoot': version,
    'management.listRoot': version,
    'client.listVersion': version,
    'management.listVersion': version,
    'client.listEnumeratedCapabilities': capabilities,
    'management.listEnumeratedCapabilities': capabilities,
    'client.listSpecs': specs,
    'management.listSpecs': specs,
    'client.detailSpec': spec,
    'management.detailSpec': spec,
    'client.detailSpecBody': specBody,
    'management.detailSpecBody': specBody,
    'client.listProtocols': async () => reply.ok({ https: { address: config.advertisedAddress } }),
  };
}
