import type { Bus, Database, Logger } from '@ziti/platform';
import type { AuditConfig } from '../config.ts';
import { PgSinkCheckpoint } from './checkpoints.store.ts';
import { sinkDurables } from './sinks.domain.ts';
import { type EventSinks, startEventSinks } from './sinks.transport.ts';

/**
 * Starts the sinks that follow the feed this service publishes (docs/extensions.md, "Event sinks").
 * The webhook keeps its position in this service's database, so every replica can run it; the file
 * sink keeps its own beside its file (a file belongs to one host).
 */
export const startSinksWiring = (d: {
  bus: Bus;
  logger: Logger;
  database: Database;
  config: AuditConfig['sinks'];
}): Promise<EventSinks> =>
  startEventSinks({
    bus: d.bus,
    logger: d.logger,
    config: d.config,
    checkpoints: { webhook: new PgSinkCheckpoint(d.database, sinkDurables.webhook) },
  });
