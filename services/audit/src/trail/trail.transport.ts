import { type EntityOwner, authenticationEventTypes } from '@ziti/contracts';
import type {
  Db,
  EventEnvelope,
  EventHandler,
  EventSink,
  EventSubscription,
  RebuildableReadModel,
} from '@ziti/platform';
import { on } from '@ziti/platform';
import type { SourceEvent } from './audit-record.domain.ts';
import { entityEventKinds, entityOwners } from './entity-kinds.domain.ts';
import type { EntityStateValue } from './state-diff.domain.ts';
import type { AuditTrail } from './trail.domain.ts';
import type { AuditStores } from './trail.ports.ts';

const sourceEvent = (event: EventEnvelope): SourceEvent => ({
  id: event.id,
  occurredAt: event.occurredAt,
  ...(event.meta ? { meta: event.meta } : {}),
});

/**
 * What audit consumes: every entity event of the four entity owners (one durable consumer each, shared by
 * the replicas; ordering, redelivery and parking are the platform's, docs/adr/0008) and auth's
 * authentication attempts (a batch per event, docs/adr/0021). Each event is applied in the consumer's
 * transaction, so the entity state, the records and their `auditRecord.created` commit with the cursor
 * that says the event was applied.
 */
export function trailSubscriptions(deps: {
  trail: AuditTrail;
  stores: (tx: Db, events: EventSink) => AuditStores;
  /** The entity states rebuilt from each owner's state pages. */
  readModels: (source: EntityOwner) => RebuildableReadModel[];
}): EventSubscription[] {
  return entityOwners.map((source) => {
    const handlers: EventHandler[] = entityEventKinds(source).map((kind) =>
      on(kind.def, (tx, data, event, events) =>
        deps.trail.applyEntityEvent(deps.stores(tx, events), kind, {
          ...sourceEvent(event),
          position: event.sequence,
          state: data as EntityStateValue,
        }),
      ),
    );
    if (source === 'auth')
      handlers.push(
        // A batch of attempts, each with its own request's meta: one record per attempt.
        on(authenticationEventTypes.authenticationAttempted, (tx, batch, event, events) =>
          deps.trail.applyAuthenticationAttempts(deps.stores(tx, events), batch.attempts, event),
        ),
      );
    return { source, handlers, readModels: deps.readModels(source) };
  });
}
