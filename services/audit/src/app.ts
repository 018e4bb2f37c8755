import type { EntityOwner } from '@ziti/contracts';
import type { Bus, Database, Db, EventSink, Logger, RunnableService } from '@ziti/platform';
import {
  OutboxRelay,
  createReader,
  createServiceRuntime,
  cuid,
  durableName,
  parkedEventResults,
  readMigrations,
} from '@ziti/platform';
import type { AuditConfig } from './config.ts';
import { PgEntityStateStore, entityStatesReadModel } from './entity-states/entity-states.store.ts';
import { pgMaintenance } from './maintenance/maintenance.store.ts';
import { maintenanceCalls } from './maintenance/maintenance.transport.ts';
import { auditOperations } from './operations.transport.ts';
import { AuditRecords } from './records/records.domain.ts';
import { PgAuditRecordStore } from './records/records.store.ts';
import { RetentionSweeper } from './retention/retention.domain.ts';
import { PgRetentionStore } from './retention/retention.store.ts';
import { PgSinkCheckpoint } from './sinks/checkpoints.store.ts';
import { sinkDurables } from './sinks/sinks.domain.ts';
import { type EventSinks, startEventSinks } from './sinks/sinks.transport.ts';
import { entityOwners, rebuildableStates } from './trail/entity-kinds.domain.ts';
import { firstResyncsDone } from './trail/rebuilds.store.ts';
import { AuditTrail } from './trail/trail.domain.ts';
import type { AuditStores } from './trail/trail.ports.ts';
import { trailSubscriptions } from './trail/trail.transport.ts';

export interface AuditServiceDeps {
  config: AuditConfig;
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
  /** How often the retention sweeper runs (default hourly; tests sweep sooner). */
  retentionIntervalMs?: number;
  /**
   * `start` resolves only once every consumer has caught up with its owner the first time (under
   * `npm start`, where the owners started before it): changes made right after the start are recorded.
   * In the cluster the owners may come later, and readiness says when the trail is live instead.
   */
  awaitFirstResyncs?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/**
 * Composition root of the audit service (issue 24): the trail made from the entity owners' events, its
 * records listed at `GET /extensions/audit-records`, `auditRecord.created` published through its outbox
 * (the change feed), and the retention sweeper.
 */
export function createAuditService(deps: AuditServiceDeps): RunnableService {
  const { database, bus, logger } = deps;
  const relay = new OutboxRelay(database, bus, 'audit', logger);
  const bind = (tx: Db, events: EventSink): AuditStores => ({
    records: new PgAuditRecordStore(tx),
    entityStates: new PgEntityStateStore(tx),
    events,
  });
  const trail = new AuditTrail({ controllerId: deps.config.controllerId, newId: cuid });
  const records = new AuditRecords(createReader(database, (db) => ({ records: new PgAuditRecordStore(db) })));
  const sweeper = new RetentionSweeper(new PgRetentionStore(database.db), {
    retentionDays: deps.config.retentionDays,
    ...(deps.retentionIntervalMs === undefined ? {} : { intervalMs: deps.retentionIntervalMs }),
    onError: (err) => logger.warn({ err }, 'audit retention sweep failed; will retry'),
    onSwept: (swept) => {
      if (swept.records > 0) logger.info({ ...swept, retentionDays: deps.config.retentionDays }, 'audit records swept');
    },
  });
  const readModels = (source: EntityOwner) =>
    rebuildableStates[source].map((s) => entityStatesReadModel(source, s.entity, s.entityType));
  const runtime = createServiceRuntime({
    owner: 'audit',
    database,
    bus,
    logger,
    migrations,
    relay,
    calls: maintenanceCalls(pgMaintenance(database, () => parkedEventResults(database.db))),
    operations: auditOperations({ records }),
    subscriptions: trailSubscriptions({ trail, stores: bind, readModels }),
    onStop: () => sweeper.stop(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
  const durables = entityOwners.map((source) => durableName('audit', source));
  let sinks: EventSinks | undefined;
  return {
    name: runtime.name,
    async start() {
      await runtime.start();
      sweeper.start();
      // The sinks follow the feed this service publishes (docs/extensions.md, "Event sinks"). The
      // webhook keeps its position in this service's database, so every replica can run it; the
      // file sink keeps its own beside its file (a file belongs to one host).
      sinks = await startEventSinks({
        bus,
        logger,
        config: deps.config.sinks,
        checkpoints: { webhook: new PgSinkCheckpoint(database, sinkDurables.webhook) },
      }).catch(async (err: unknown) => {
        await runtime.stop();
        throw err;
      });
      if (deps.awaitFirstResyncs) {
        const deadline = Date.now() + 60_000;
        while (!(await firstResyncsDone(database.db, durables))) {
          if (Date.now() > deadline) {
            await sinks?.stop();
            await runtime.stop();
            throw new Error('audit: its consumers did not catch up with their owners in 60 s');
          }
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
    },
    async ready() {
      return (await runtime.ready()) && (await firstResyncsDone(database.db, durables));
    },
    async stop() {
      await sinks?.stop();
      sinks = undefined;
      await runtime.stop();
    },
  };
}
