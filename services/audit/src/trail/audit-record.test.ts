import { auditRecordState, entityChangeEvent } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { authenticationRecord, changeRecord, entityNameOf } from './audit-record.domain.ts';
import { redacted } from './redaction.domain.ts';

const meta = {
  requestId: 'req-1',
  operation: 'management.updateIdentity',
  remoteAddress: '127.0.0.1',
  identityId: 'admin-1',
  apiSessionId: 'sess-1',
};
const event = { id: 'auth:42', occurredAt: '2026-01-02T03:04:05.678Z', meta };
const before = { id: 'i1', name: 'alice', isAdmin: false, updatedAt: '2026-01-01T00:00:00.000Z' };
const after = { id: 'i1', name: 'bob', isAdmin: false, updatedAt: '2026-01-02T03:04:05.000Z' };

describe('changeRecord', () => {
  it('names the actor, the request and what changed, and publishes the same as an entity change', () => {
    const { record, change } = changeRecord({
      recordId: 'r1',
      event,
      entityType: 'identities',
      entityId: 'i1',
      action: 'updated',
      before,
      after,
      actorName: 'Default Admin',
      controllerId: 'ctrl-1',
    });
    expect(record).toEqual({
      id: 'r1',
      at: event.occurredAt,
      category: 'change',
      operation: 'management.updateIdentity',
      method: 'PUT',
      requestId: 'req-1',
      remoteAddress: '127.0.0.1',
      actorId: 'admin-1',
      actorName: 'Default Admin',
      apiSessionId: 'sess-1',
      entityType: 'identities',
      entityId: 'i1',
      entityName: 'bob',
      action: 'updated',
      changes: {
        name: { before: 'alice', after: 'bob' },
        updatedAt: { before: before.updatedAt, after: after.updatedAt },
      },
      eventId: 'auth:42',
    });
    expect(change).toEqual({
      namespace: 'entityChange',
      event_src_id: 'ctrl-1',
      timestamp: event.occurredAt,
      eventId: 'auth:42',
      eventType: 'updated',
      metadata: {
        author: { type: 'identity', id: 'admin-1', name: 'Default Admin' },
        source: { type: 'rest', auth: 'edge', remoteAddr: '127.0.0.1', method: 'PUT' },
        operation: 'management.updateIdentity',
        requestId: 'req-1',
        apiSessionId: 'sess-1',
        version: 'v1.1.9',
      },
      entityType: 'identities',
      isParentEvent: false,
      initialState: before,
      finalState: after,
    });
    expect(auditRecordState.parse(record)).toEqual(record);
    expect(entityChangeEvent.parse(change)).toEqual(change);
  });

  it('a creation has no initial state, a deletion no final state; both list every field', () => {
    const created = changeRecord({
      recordId: 'r2',
      event: { ...event, meta: { ...meta, operation: 'management.createIdentity' } },
      entityType: 'identities',
      entityId: 'i1',
      action: 'created',
      before: null,
      after,
      controllerId: 'c',
    });
    expect(created.record.method).toBe('POST');
    expect(created.record.changes?.name).toEqual({ before: null, after: 'bob' });
    expect(created.change.initialState).toBeNull();
    const deleted = changeRecord({
      recordId: 'r3',
      event: { ...event, meta: { ...meta, operation: 'management.deleteIdentity' } },
      entityType: 'identities',
      entityId: 'i1',
      action: 'deleted',
      before: after,
      after: null,
      controllerId: 'c',
    });
    expect(deleted.record).toMatchObject({ method: 'DELETE', entityName: 'bob', action: 'deleted' });
    expect(deleted.record.changes?.name).toEqual({ before: 'bob', after: null });
    expect(deleted.change.finalState).toBeNull();
  });

  it('leaves the changes and initial state out when the state before is unknown', () => {
    const { record, change } = changeRecord({
      recordId: 'r4',
      event,
      entityType: 'identities',
      entityId: 'i1',
      action: 'updated',
      before: undefined,
      after,
      controllerId: 'c',
    });
    expect(record.changes).toBeUndefined();
    expect('initialState' in change).toBe(false);
  });

  it('keeps secrets out of the record and the change, and shows certificates as fingerprints', () => {
    const pem = '-----BEGIN CERTIFICATE-----\nAAECAwQ=\n-----END CERTIFICATE-----\n';
    const { record, change } = changeRecord({
      recordId: 'r5',
      event: { ...event, meta: { ...meta, operation: 'management.updateCa' } },
      entityType: 'cas',
      entityId: 'ca1',
      action: 'updated',
      before: { id: 'ca1', name: 'ca', certPem: pem, token: 'tok-old-123' },
      after: { id: 'ca1', name: 'ca', certPem: pem, token: 'tok-new-456' },
      controllerId: 'c',
    });
    const text = JSON.stringify({ record, change });
    expect(text).not.toMatch(/tok-(old|new)|BEGIN CERTIFICATE/);
    expect(record.changes).toEqual({ token: { before: redacted, after: redacted } });
    expect(change.finalState?.certPem).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('has no author without an identity (a request before authentication)', () => {
    const { record, change } = changeRecord({
      recordId: 'r6',
      event: { ...event, meta: { requestId: 'q', operation: 'client.enrollOtt' } },
      entityType: 'authenticators',
      entityId: 'a1',
      action: 'created',
      before: null,
      after: { id: 'a1', username: null },
      actorName: 'ignored',
      controllerId: 'c',
    });
    expect(record.actorId).toBeUndefined();
    expect(record.actorName).toBeUndefined();
    expect(change.metadata.author).toBeUndefined();
  });
});

describe('entityNameOf', () => {
  it('takes the name, else the username', () => {
    expect(entityNameOf({ name: 'n', username: 'u' })).toBe('n');
    expect(entityNameOf({ username: 'u' })).toBe('u');
    expect(entityNameOf({ id: 'x' })).toBeUndefined();
    expect(entityNameOf(null)).toBeUndefined();
  });
});

describe('authenticationRecord', () => {
  it('records the outcome, method, reason and the identity', () => {
    const record = authenticationRecord({
      recordId: 'a1',
      event: {
        id: 'auth:7',
        occurredAt: '2026-01-02T00:00:01.000Z',
        meta: { requestId: 'rq', operation: 'client.authenticate', remoteAddress: '::ffff:127.0.0.1' },
      },
      attempt: {
        method: 'password',
        outcome: 'failed',
        identityId: 'i1',
        reason: 'INVALID_AUTH',
        at: '2026-01-02T00:00:00.500Z',
      },
      actorName: 'alice',
    });
    expect(record).toEqual({
      id: 'a1',
      at: '2026-01-02T00:00:00.500Z',
      category: 'authentication',
      operation: 'client.authenticate',
      method: 'POST',
      requestId: 'rq',
      remoteAddress: '::ffff:127.0.0.1',
      actorId: 'i1',
      actorName: 'alice',
      action: 'failed',
      authMethod: 'password',
      reason: 'INVALID_AUTH',
      eventId: 'auth:7',
    });
    expect(auditRecordState.parse(record)).toEqual(record);
  });

  it('without the request meta still names the operation', () => {
    const record = authenticationRecord({
      recordId: 'a2',
      event: { id: 'auth:8', occurredAt: '2026-01-02T00:00:01.000Z' },
      attempt: { method: 'mfa', outcome: 'succeeded', apiSessionId: 's1', at: '2026-01-02T00:00:00.000Z' },
    });
    expect(record).toMatchObject({ operation: 'client.authenticateMfa', requestId: '', apiSessionId: 's1' });
    expect(record.actorId).toBeUndefined();
  });
});
