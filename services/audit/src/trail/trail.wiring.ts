import type { EntityOwner } from '@ziti/contracts';
import { type Db, type EventSink, type EventSubscription, cuid } from '@ziti/platform';
import { PgEntityStateStore, entityStatesReadModel } from '../entity-states/entity-states.store.ts';
import { PgAuditRecordStore } from '../records/records.store.ts';
import { rebuildableStates } from './entity-kinds.domain.ts';
import { AuditTrail } from './trail.domain.ts';
import type { AuditStores } from './trail.ports.ts';
import { trailSubscriptions } from './trail.transport.ts';

/**
 * The trail: one consumer per entity owner turning its events into audit records (with the entity
 * states a record's `before` comes from, rebuilt from the owners' pages).
 */
export function trailWiring(controllerId: string): EventSubscription[] {
  const stores = (tx: Db, events: EventSink): AuditStores => ({
    records: new PgAuditRecordStore(tx),
    entityStates: new PgEntityStateStore(tx),
    events,
  });
  const readModels = (source: EntityOwner) =>
    rebuildableStates[source].map((s) => entityStatesReadModel(source, s.entity, s.entityType));
  return trailSubscriptions({ trail: new AuditTrail({ controllerId, newId: cuid }), stores, readModels });
}
