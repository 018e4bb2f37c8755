import type { GatewayOperationKey } from '@ziti/contracts';
import type { Bus, Logger } from '@ziti/platform';
import { auditExportHandler } from '../audit-export/audit-export.transport.ts';
import type { GatewayConfig } from '../config.ts';
import type { EventStreams } from '../event-stream/event-stream.transport.ts';
import {
  type InformationalOperationKey,
  type StreamOperationKey,
  informationalHandlers,
} from '../informational/informational.transport.ts';
import type { GatewayHandler, LocalHandler, StreamingHandler } from './pipeline.transport.ts';

/**
 * Every operation the gateway owns, with exactly one handler: a reply (informational) or a stream.
 * The two key sets partition `GatewayOperationKey`, so the compiler finds an operation left without
 * a handler or given two.
 */
export function gatewayHandlers(
  informational: Record<InformationalOperationKey, LocalHandler>,
  streams: Record<StreamOperationKey, StreamingHandler>,
): Record<GatewayOperationKey, GatewayHandler> {
  return { ...informational, ...streams };
}

/** The operations the gateway answers itself: version and specs, the change stream, the audit export. */
export const localHandlersWiring = (
  deps: { config: GatewayConfig; bus: Bus; logger: Logger },
  eventStreams: EventStreams,
) =>
  gatewayHandlers(informationalHandlers(deps.config), {
    'management.streamEntityChangeEvents': eventStreams.handler,
    'management.exportAuditRecords': auditExportHandler({
      bus: deps.bus,
      logger: deps.logger,
      requestTimeoutMs: deps.config.requestTimeoutMs,
    }),
  });
