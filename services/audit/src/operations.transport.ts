import type { OperationHandlers } from '@ziti/platform';
import type { AuditRecords } from './records/records.domain.ts';
import { recordOperations } from './records/records.transport.ts';

export interface AuditOperationDeps {
  records: AuditRecords;
}

/** Every operation audit owns, keyed `<api>.<operationId>` (the compiler checks the table names each one). */
export function auditOperations(deps: AuditOperationDeps): OperationHandlers<'audit'> {
  return {
    ...recordOperations(deps),
  };
}
