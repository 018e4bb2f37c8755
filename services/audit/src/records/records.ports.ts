import type { AuditRecordState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';

/** The audit records: written once per source event, listed with ZitiQL. */
export interface AuditRecordStore {
  /** Stores the record unless one was made from the same event already; whether it stored it. */
  insert(record: AuditRecordState): Promise<boolean>;
  /**
   * Stores, in one statement, every record whose source event has none yet (a redelivered event's
   * records are skipped); the event ids of the records it stored.
   */
  insertMany(records: AuditRecordState[]): Promise<string[]>;
  /** One page of records (ZitiQL filter, sort and paging; `sort` applies when the filter has no `sort by`). */
  list(input: ListInput): Promise<ListPage<AuditRecordState>>;
}
