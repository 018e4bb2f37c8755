import type { EventSink } from '@ziti/platform/event-sink';
import type { EntityStateStore } from '../entity-states/entity-states.ports.ts';
import type { AuditRecordStore } from '../records/records.ports.ts';

/** The stores of one transaction and the events (`auditRecord.created`) that leave with its commit. */
export interface AuditStores {
  records: AuditRecordStore;
  entityStates: EntityStateStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: AuditStores) => Promise<T>) => Promise<T>;
