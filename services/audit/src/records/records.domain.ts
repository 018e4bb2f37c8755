import type { AuditRecordState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { AuditRecordStore } from './records.ports.ts';

/** The order of `GET /extensions/audit-records` unless the filter sorts (`sort by`) or `sort` is given. */
export const defaultRecordSort = 'at desc';

/** Reads the trail: `records` bound to the pool, outside any transaction. */
export type RecordReader = <T>(fn: (s: { records: AuditRecordStore }) => Promise<T>) => Promise<T>;

/** The audit trail as operators read it: ZitiQL over the records, newest first by default. */
export class AuditRecords {
  constructor(private readonly read: RecordReader) {}

  list(input: ListInput): Promise<ListPage<AuditRecordState>> {
    const sort = input.sort === undefined || input.sort.trim() === '' ? defaultRecordSort : input.sort;
    return this.read((s) => s.records.list({ ...input, sort }));
  }
}
