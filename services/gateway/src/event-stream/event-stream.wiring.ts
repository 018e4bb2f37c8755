import type { ApiSessionStore, Bus, Logger } from '@ziti/platform';
import type { GatewayConfig } from '../config.ts';
import { EventStreams } from './event-stream.transport.ts';

/** The change stream's subscribers (`GET /events`), each following the bus for its API session. */
export const eventStreamsWiring = (deps: {
  config: GatewayConfig;
  bus: Bus;
  sessions: ApiSessionStore;
  logger: Logger;
}) =>
  new EventStreams({
    bus: deps.bus,
    sessions: deps.sessions,
    sessionTimeoutSeconds: deps.config.sessionTimeoutSeconds,
    logger: deps.logger,
  });
