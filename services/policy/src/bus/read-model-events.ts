import {
  type EntityStateType,
  type EventDefinition,
  edgeRouterState,
  eventTypes,
  identityState,
  inventoryEventTypes,
  serviceState,
} from '@ziti/contracts';
import type { Db, EventSubscription, Logger, RebuildableReadModel } from '@ziti/platform';
import { parseEventData } from '@ziti/platform';
import type { z } from 'zod';
import type { EdgeRouterReadModel, EntityReadModel, IdentityReadModel, ServiceReadModel } from '../domain/ports.ts';
import { applyOwnerPage } from '../domain/read-model-integrity.ts';

interface ReadModelSource<S extends { id: string }> {
  /** The owner's entity type (its `entityStates` type). */
  entity: EntityStateType;
  schema: z.ZodType<S>;
  created: EventDefinition;
  updated: EventDefinition;
  deleted: EventDefinition;
  model: (tx: Db) => EntityReadModel<S>;
  logger: Logger;
}

/**
 * Keeps a read model from its owner's `<entity>.created|updated|deleted` events (full states,
 * applied by position in any order) and rebuilds it from the owner's state pages on first start or
 * after a gap (docs/adr/0008).
 */
function readModelFeed<S extends { id: string }>(
  o: ReadModelSource<S>,
): Pick<EventSubscription, 'handlers' | 'readModels'> {
  const parse = (raw: Record<string, unknown>) => {
    const parsed = o.schema.safeParse(raw);
    return parsed.success ? parsed.data : null;
  };
  const rebuild: RebuildableReadModel = {
    entity: o.entity,
    applyPage: async (tx, page) => {
      const unreadable = await applyOwnerPage(o.model(tx), page, parse);
      if (unreadable > 0) o.logger.warn({ entity: o.entity, unreadable }, 'owner states of an unknown shape skipped');
    },
    prune: (tx, watermark) => o.model(tx).pruneTombstones(watermark),
  };
  return {
    handlers: [o.created, o.updated, o.deleted].map((def) => ({
      type: def.type,
      handle: async (tx, event) => {
        await o.model(tx).apply(parseEventData(o.schema, event), event.sequence, def === o.deleted);
      },
    })),
    readModels: [rebuild],
  };
}

/** policy's read models of inventory's services and edge routers. */
export const inventoryReadModelSubscription = (
  services: (tx: Db) => ServiceReadModel,
  edgeRouters: (tx: Db) => EdgeRouterReadModel,
  logger: Logger,
): EventSubscription => {
  const s = readModelFeed({
    entity: 'service',
    schema: serviceState,
    created: inventoryEventTypes.serviceCreated,
    updated: inventoryEventTypes.serviceUpdated,
    deleted: inventoryEventTypes.serviceDeleted,
    model: services,
    logger,
  });
  const r = readModelFeed({
    entity: 'edgeRouter',
    schema: edgeRouterState,
    created: inventoryEventTypes.edgeRouterCreated,
    updated: inventoryEventTypes.edgeRouterUpdated,
    deleted: inventoryEventTypes.edgeRouterDeleted,
    model: edgeRouters,
    logger,
  });
  return {
    source: 'inventory',
    handlers: [...s.handlers, ...r.handlers],
    readModels: [...(s.readModels ?? []), ...(r.readModels ?? [])],
  };
};

/** policy's read model of auth's identities. */
export const authReadModelSubscription = (
  identities: (tx: Db) => IdentityReadModel,
  logger: Logger,
): EventSubscription => ({
  source: 'auth',
  ...readModelFeed({
    entity: 'identity',
    schema: identityState,
    created: eventTypes.identityCreated,
    updated: eventTypes.identityUpdated,
    deleted: eventTypes.identityDeleted,
    model: identities,
    logger,
  }),
});
