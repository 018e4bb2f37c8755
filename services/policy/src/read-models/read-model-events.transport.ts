import {
  type ConfigState,
  type ConfigTypeState,
  type EntityStateType,
  type EventDefinition,
  type IdentityServiceConfigsState,
  configState,
  configTypeState,
  edgeRouterState,
  identityServiceConfigsState,
  eventTypes,
  identityState,
  inventoryEventTypes,
  routerPresenceEventTypes,
  routerPresenceState,
  serviceState,
} from '@ziti/contracts';
import type { Db, EventSink, EventSubscription, Logger, RebuildableReadModel } from '@ziti/platform';
import { on, withRequestMeta } from '@ziti/platform';
import type { z } from 'zod';
import type { OwnerEntity } from '../policies/entity-changes.domain.ts';
import { applyOwnerState } from './owner-state.domain.ts';
import { applyOwnerPage } from './read-model-integrity.domain.ts';
import type {
  EdgeRouterReadModel,
  EntityChange,
  EntityReadModel,
  IdentityReadModel,
  RouterPresenceReadModel,
  ServiceReadModel,
} from './read-models.ports.ts';

interface ReadModelSource<S extends { id: string }> {
  /** The owner's entity type (its `entityStates` type). */
  entity: EntityStateType;
  schema: z.ZodType<S>;
  created?: EventDefinition;
  updated: EventDefinition;
  deleted?: EventDefinition;
  model: (tx: Db) => EntityReadModel<S>;
  /** Derives again what depends on the entity, in the same transaction, when its row changed (absent: nothing does). */
  changed?: (tx: Db, id: string, events: EventSink, change: EntityChange) => Promise<void>;
  /** Instead of `changed` when the row changed by the owner's deletion (absent: `changed`). */
  removed?: (tx: Db, id: string, events: EventSink, change: EntityChange) => Promise<void>;
  /** Derives everything again after the read model was rebuilt from its owner (absent: nothing to derive). */
  rebuilt?: (tx: Db, events: EventSink) => Promise<void>;
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
    ...(o.rebuilt ? { rebuilt: o.rebuilt } : {}),
  };
  return {
    handlers: [o.created, o.updated, o.deleted]
      .filter((d) => d !== undefined)
      .map((def) =>
        on(
          def,
          async (tx, state, event, events) => {
            const deleted = def === o.deleted;
            const derive = (deleted ? o.removed : undefined) ?? o.changed;
            const apply = () =>
              applyOwnerState(o.model(tx), state, event.sequence, deleted, async (id, change) =>
                derive?.(tx, id, events, change),
              );
            // What policy changes because of it (a policy's roles, a system policy) was made on behalf of
            // the request that made the owner's change: its events carry that request's meta, as a
            // policy change made through the API does, so the audit trail records them.
            await (event.meta ? withRequestMeta(event.meta, apply) : apply());
          },
          { read: o.schema },
        ),
      ),
    readModels: [rebuild],
  };
}

/**
 * What the read models' changes feed: the derived access (docs/adr/0009), the policies' roles and
 * system policies (policies/entity-changes.domain.ts) and the service views.
 */
export interface Derivations {
  /** `change.fresh`: policy had no row of it before (its access is known to be empty). */
  identityChanged(tx: Db, id: string, events: EventSink, change?: EntityChange): Promise<void>;
  serviceChanged(tx: Db, id: string, events: EventSink, change?: EntityChange): Promise<void>;
  edgeRouterChanged(tx: Db, id: string, events: EventSink): Promise<void>;
  /** The owner deleted it: also out of every policy's roles (and an edge router's system policy gone). */
  identityDeleted(tx: Db, id: string, events: EventSink): Promise<void>;
  serviceDeleted(tx: Db, id: string, events: EventSink): Promise<void>;
  edgeRouterDeleted(tx: Db, id: string, events: EventSink): Promise<void>;
  /** A config, config type or an identity's overrides changed: whose service lists show it. */
  configChanged(tx: Db, id: string, events: EventSink): Promise<void>;
  configTypeChanged(tx: Db, id: string, events: EventSink): Promise<void>;
  overridesChanged(tx: Db, identityId: string, events: EventSink): Promise<void>;
  /** The read model of `entity` was rebuilt from its owner: everything derived again. */
  rebuild(tx: Db, events: EventSink, entity: OwnerEntity): Promise<void>;
  /** Configs, config types or overrides were rebuilt from inventory: every service view may have moved. */
  viewsRebuilt(tx: Db, events: EventSink): Promise<void>;
}

/** The read models policy keeps of inventory's entities. */
export interface InventoryReadModels {
  services: (tx: Db) => ServiceReadModel;
  edgeRouters: (tx: Db) => EdgeRouterReadModel;
  configs: (tx: Db) => EntityReadModel<ConfigState>;
  configTypes: (tx: Db) => EntityReadModel<ConfigTypeState>;
  overrides: (tx: Db) => EntityReadModel<IdentityServiceConfigsState>;
  presence: (tx: Db) => RouterPresenceReadModel;
}

/**
 * policy's read models of inventory's services, edge routers, configs, config types, overrides and
 * router presence.
 */
export const inventoryReadModelSubscription = (
  m: InventoryReadModels,
  derive: Derivations,
  logger: Logger,
): EventSubscription => {
  const { services, edgeRouters } = m;
  const s = readModelFeed({
    entity: 'service',
    schema: serviceState,
    created: inventoryEventTypes.serviceCreated,
    updated: inventoryEventTypes.serviceUpdated,
    deleted: inventoryEventTypes.serviceDeleted,
    model: services,
    changed: (tx, id, events, change) => derive.serviceChanged(tx, id, events, change),
    removed: (tx, id, events) => derive.serviceDeleted(tx, id, events),
    rebuilt: (tx, events) => derive.rebuild(tx, events, 'services'),
    logger,
  });
  const r = readModelFeed({
    entity: 'edgeRouter',
    schema: edgeRouterState,
    created: inventoryEventTypes.edgeRouterCreated,
    updated: inventoryEventTypes.edgeRouterUpdated,
    deleted: inventoryEventTypes.edgeRouterDeleted,
    model: edgeRouters,
    changed: (tx, id, events) => derive.edgeRouterChanged(tx, id, events),
    removed: (tx, id, events) => derive.edgeRouterDeleted(tx, id, events),
    rebuilt: (tx, events) => derive.rebuild(tx, events, 'edgeRouters'),
    logger,
  });
  const c = readModelFeed({
    entity: 'config',
    schema: configState,
    created: inventoryEventTypes.configCreated,
    updated: inventoryEventTypes.configUpdated,
    deleted: inventoryEventTypes.configDeleted,
    model: m.configs,
    changed: (tx, id, events) => derive.configChanged(tx, id, events),
    rebuilt: (tx, events) => derive.viewsRebuilt(tx, events),
    logger,
  });
  const t = readModelFeed({
    entity: 'configType',
    schema: configTypeState,
    created: inventoryEventTypes.configTypeCreated,
    updated: inventoryEventTypes.configTypeUpdated,
    deleted: inventoryEventTypes.configTypeDeleted,
    model: m.configTypes,
    changed: (tx, id, events) => derive.configTypeChanged(tx, id, events),
    rebuilt: (tx, events) => derive.viewsRebuilt(tx, events),
    logger,
  });
  // One state per identity; an identity whose overrides are all gone has an empty list (no delete).
  const o = readModelFeed({
    entity: 'identityServiceConfigs',
    schema: identityServiceConfigsState,
    updated: inventoryEventTypes.identityServiceConfigsUpdated,
    model: m.overrides,
    changed: (tx, id, events) => derive.overridesChanged(tx, id, events),
    rebuilt: (tx, events) => derive.viewsRebuilt(tx, events),
    logger,
  });
  // One state per router that reported a connection (`routerPresence.changed`, no delete): what the
  // router reads show of it. Nothing is derived from it (no access, no service view depends on it).
  const p = readModelFeed({
    entity: 'routerPresence',
    schema: routerPresenceState,
    updated: routerPresenceEventTypes.routerPresenceChanged,
    model: m.presence,
    logger,
  });
  const feeds = [s, r, c, t, o, p];
  return {
    source: 'inventory',
    handlers: feeds.flatMap((f) => f.handlers),
    readModels: feeds.flatMap((f) => f.readModels ?? []),
  };
};

/** policy's read model of auth's identities. */
export const authReadModelSubscription = (
  identities: (tx: Db) => IdentityReadModel,
  derive: Derivations,
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
    changed: (tx, id, events, change) => derive.identityChanged(tx, id, events, change),
    removed: (tx, id, events) => derive.identityDeleted(tx, id, events),
    rebuilt: (tx, events) => derive.rebuild(tx, events, 'identities'),
    logger,
  }),
});
