import { eventTypes, identityState } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import type { EventEnvelope } from '../src/bus/bus.ts';
import type { Db } from '../src/db/database.ts';
import { readOnlyEventSink } from '../src/db/outbox.ts';
import { on } from '../src/events/consumer.ts';

const envelope = (data: unknown, version = 1): EventEnvelope =>
  ({
    id: 'auth:7',
    source: 'auth',
    type: eventTypes.identityDeleted.type,
    version,
    sequence: 7,
    occurredAt: '2026-11-27T10:00:00.000Z',
    data,
  }) as EventEnvelope;

const identity = {
  id: 'i1',
  name: 'one',
  typeId: 'User',
  isAdmin: false,
  isDefaultAdmin: false,
  roleAttributes: [],
  externalId: null,
  authPolicyId: 'default',
  disabled: false,
  tags: {},
  createdAt: '2026-11-27T10:00:00.000Z',
  updatedAt: '2026-11-27T10:00:00.000Z',
};

describe('on(def, handle)', () => {
  it('handles its definition’s type and hands over the data decoded by its schema (defaults applied)', async () => {
    const seen: unknown[] = [];
    const handler = on(eventTypes.identityDeleted, async (_tx, data, event) => {
      seen.push([data.name, data.disabledAt, event.sequence]);
    });
    expect(handler.type).toBe('identity.deleted');
    expect(handler.versions).toBeUndefined();
    await handler.handle({} as Db, envelope(identity), readOnlyEventSink);
    expect(seen).toEqual([['one', null, 7]]);
  });

  it('reads with a narrower schema and accepts the versions it names', async () => {
    const ids: string[] = [];
    const handler = on(eventTypes.identityDeleted, async (_tx, { id }) => void ids.push(id), {
      versions: [1, 2],
      read: identityState.pick({ id: true }),
    });
    expect(handler.versions).toEqual([1, 2]);
    await handler.handle({} as Db, envelope({ id: 'only-the-id' }, 2), readOnlyEventSink);
    expect(ids).toEqual(['only-the-id']);
  });

  it('fails the delivery of data that does not decode, so the consumer retries and then parks it', async () => {
    const handler = on(eventTypes.identityDeleted, async () => undefined);
    await expect(handler.handle({} as Db, envelope({ id: 5 }), readOnlyEventSink)).rejects.toThrow(
      /identity.deleted v1 auth:7 does not match its contract/,
    );
  });
});
