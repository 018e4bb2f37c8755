import {
  type Owner,
  edgeRouterState,
  eventTypes,
  identityState,
  inventoryEventTypes,
  serviceState,
  subjects,
} from '@ziti/contracts';
import type { Db, EventSubscription, Logger } from '@ziti/platform';
import type { z } from 'zod';
import type { EdgeRouterReadModel, EntityReadModel, IdentityReadModel, ServiceReadModel } from '../domain/ports.ts';

interface ReadModelSubscriptionOptions<S extends { id: string }> {
  owner: Exclude<Owner, 'gateway'>;
  /** The event type prefix, e.g. `service` for `service.created|updated|deleted`. */
  entity: string;
  durable: string;
  schema: z.ZodType<S>;
  deletedType: string;
  model: (tx: Db) => EntityReadModel<S>;
  logger: Logger;
}

/** Keeps a read model from its owner's `<entity>.*` events (at-least-once, any order). */
export function readModelSubscription<S extends { id: string }>(o: ReadModelSubscriptionOptions<S>): EventSubscription {
  return {
    subject: `${subjects.event(o.owner, o.entity)}.>`,
    durable: o.durable,
    handle: async (tx, event) => {
      const parsed = o.schema.safeParse(event.data);
      if (!parsed.success) {
        o.logger.error({ eventId: event.id, type: event.type }, `${o.entity} event with an unknown shape; skipped`);
        return;
      }
      await o.model(tx).apply(parsed.data, event.sequence, event.type === o.deletedType);
    },
  };
}

export const serviceEventSubscription = (model: (tx: Db) => ServiceReadModel, logger: Logger) =>
  readModelSubscription({
    owner: 'inventory',
    entity: 'service',
    durable: 'policy-services',
    schema: serviceState,
    deletedType: inventoryEventTypes.serviceDeleted.type,
    model,
    logger,
  });

export const edgeRouterEventSubscription = (model: (tx: Db) => EdgeRouterReadModel, logger: Logger) =>
  readModelSubscription({
    owner: 'inventory',
    entity: 'edgeRouter',
    durable: 'policy-edge-routers',
    schema: edgeRouterState,
    deletedType: inventoryEventTypes.edgeRouterDeleted.type,
    model,
    logger,
  });

export const identityEventSubscription = (model: (tx: Db) => IdentityReadModel, logger: Logger) =>
  readModelSubscription({
    owner: 'auth',
    entity: 'identity',
    durable: 'policy-identities',
    schema: identityState,
    deletedType: eventTypes.identityDeleted.type,
    model,
    logger,
  });
