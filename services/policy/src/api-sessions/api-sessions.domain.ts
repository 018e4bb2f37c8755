import type { ApiSessionState } from '@ziti/contracts';
import type { ApiSessionRecords } from './api-sessions.ports.ts';

/**
 * What policy keeps of an API session's start: auth's `apiSession.created` state, which auth no
 * longer publishes (docs/adr/0017) but a stream written by an older auth may still hold.
 */
export type ApiSessionStart = Pick<
  ApiSessionState,
  'id' | 'identityId' | 'authMethod' | 'isMfaRequired' | 'isMfaComplete' | 'configTypes' | 'createdAt'
>;

/**
 * API sessions as auth announces them: edge sessions and posture data end with theirs, whatever
 * the reason (logout, expiry, an administrator, the identity deleted or disabled). Every step is
 * idempotent and order-independent.
 */
export class ApiSessionLifecycle {
  async started(records: ApiSessionRecords, s: Parameters<ApiSessionRecords['started']>[0]): Promise<void> {
    await records.started(s);
  }

  async mfaPassed(records: ApiSessionRecords, id: string, identityId: string, at: string): Promise<void> {
    await records.mfaPassed(id, identityId, at);
  }

  async ended(records: ApiSessionRecords, id: string, identityId: string, at: string): Promise<number> {
    const removed = await records.ended(id, identityId, at);
    await records.forgetPosture(id);
    return removed;
  }
}
