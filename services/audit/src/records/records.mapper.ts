import type { AuditRecordState } from '@ziti/contracts';

/** A record as `auditRecordDetail` shows it (every absent field left out). */
export function auditRecordDetail(record: AuditRecordState): AuditRecordState {
  return Object.fromEntries(Object.entries(record).filter(([, v]) => v !== undefined)) as AuditRecordState;
}
