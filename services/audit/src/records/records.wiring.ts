import { type Database, createReader } from '@ziti/platform';
import { AuditRecords } from './records.domain.ts';
import { PgAuditRecordStore } from './records.store.ts';

/** The records `GET /extensions/audit-records` lists, read on the pool. */
export const recordsWiring = (database: Database) =>
  new AuditRecords(createReader(database, (db) => ({ records: new PgAuditRecordStore(db) })));
