import { type OperationHandlers, listInputOf, pageReply } from '@ziti/platform';
import type { AuditRecords } from './records.domain.ts';
import { auditRecordDetail } from './records.mapper.ts';

/** `GET /extensions/audit-records`: the trail, ZitiQL-filtered, sorted and paged (admins only, at the gateway). */
export function recordOperations(deps: { records: AuditRecords }) {
  return {
    'management.listAuditRecords': async (req) =>
      pageReply(await deps.records.list(listInputOf(req)), auditRecordDetail),
  } satisfies Partial<OperationHandlers<'audit'>>;
}
