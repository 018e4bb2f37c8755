import { ApiError, type EntityChangeEvent } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import {
  changeMessage,
  changeOf,
  errorMessage,
  selects,
  sseComment,
  sseMessage,
  sseRetry,
  streamRequestOf,
} from './event-stream.domain.ts';
import { SubscriberQueue } from './subscriber-queue.domain.ts';

function change(over: Partial<EntityChangeEvent> = {}): EntityChangeEvent {
  return {
    namespace: 'entityChange',
    event_src_id: 'ctrl',
    timestamp: '2024-06-01T12:00:00.000Z',
    eventId: 'auth:1',
    eventType: 'created',
    metadata: { version: 'v1' },
    entityType: 'identities',
    isParentEvent: false,
    initialState: null,
    finalState: { id: 'i1', name: 'web', isAdmin: false, roleAttributes: ['a'] },
    ...over,
  };
}

function error(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected an ApiError');
}

describe('Server-Sent Events framing', () => {
  it('writes id, event and one data field per line, then a blank line', () => {
    expect(sseMessage({ id: 42, event: 'created', data: '{"a":1}' })).toBe('id: 42\nevent: created\ndata: {"a":1}\n\n');
    expect(sseMessage({ data: 'one\ntwo\r\nthree\rfour' })).toBe('data: one\ndata: two\ndata: three\ndata: four\n\n');
    expect(sseMessage({ data: '' })).toBe('data: \n\n');
  });

  it('keeps field values on one line (an id or event with a newline cannot inject fields)', () => {
    expect(sseMessage({ id: '1\ndata: x', event: 'a\r\nb', data: 'd' })).toBe('id: 1 data: x\nevent: a b\ndata: d\n\n');
    expect(sseComment('keep\nalive')).toBe(': keep alive\n\n');
  });

  it('frames a change with its position as id and its eventType as event; the data is the change', () => {
    const c = change({ finalState: { note: 'line one\nline two' } });
    const text = changeMessage(c, 1234);
    expect(text.startsWith('id: 1234\nevent: created\ndata: ')).toBe(true);
    // JSON escapes the newline: one data line, which parses back to the change.
    expect(text.split('\n').filter((l) => l.startsWith('data: '))).toHaveLength(1);
    expect(JSON.parse(text.split('\n')[2]!.slice('data: '.length))).toEqual(c);
  });

  it('writes errors as `event: error` with a code and message, and the retry delay', () => {
    const text = errorMessage('SLOW_CONSUMER', 'too slow', { queued: 5 });
    expect(text).toBe('event: error\ndata: {"code":"SLOW_CONSUMER","message":"too slow","queued":5}\n\n');
    expect(sseRetry(3000)).toBe('retry: 3000\n\n');
  });
});

describe('a subscriber request', () => {
  it('reads entity types, event types, the filter and the position', () => {
    const r = streamRequestOf(
      { entityType: ['identities', 'services'], eventType: ['created'], filter: 'name = "web"', lastEventId: '7' },
      undefined,
    );
    expect(r.afterSequence).toBe(7);
    expect([...r.selection.entityTypes!]).toEqual(['identities', 'services']);
    expect([...r.selection.eventTypes!]).toEqual(['created']);
    expect(r.selection.condition({ name: 'web' })).toBe(true);
    expect(r.selection.condition({ name: 'db' })).toBe(false);
    expect(streamRequestOf({}, undefined)).toMatchObject({ selection: {} });
    expect(streamRequestOf({}, undefined).afterSequence).toBeUndefined();
    expect(streamRequestOf({ entityType: 'identities' }, undefined).selection.entityTypes).toEqual(
      new Set(['identities']),
    );
  });

  it('takes the Last-Event-ID header over the lastEventId parameter', () => {
    expect(streamRequestOf({ lastEventId: '7' }, '9').afterSequence).toBe(9);
    expect(streamRequestOf({ lastEventId: '7' }, '  ').afterSequence).toBe(7);
    expect(streamRequestOf({}, '0').afterSequence).toBe(0);
  });

  it('answers a bad filter with INVALID_FILTER and a bad position with COULD_NOT_VALIDATE naming it', () => {
    expect(error(() => streamRequestOf({ filter: 'name = ' }, undefined)).code).toBe('INVALID_FILTER');
    expect(error(() => streamRequestOf({ filter: 'name = "x" sort by name' }, undefined)).code).toBe('INVALID_FILTER');
    expect(error(() => streamRequestOf({ filter: 'isEmpty(from x where true)' }, undefined)).code).toBe(
      'INVALID_FILTER',
    );
    const header = error(() => streamRequestOf({}, 'abc'));
    expect(header.code).toBe('COULD_NOT_VALIDATE');
    expect(header.cause).toMatchObject({ field: 'Last-Event-ID' });
    const parameter = error(() => streamRequestOf({ lastEventId: '-1' }, undefined));
    expect(parameter.cause).toMatchObject({ field: 'lastEventId' });
    expect(error(() => streamRequestOf({ lastEventId: '99999999999999999' }, undefined)).code).toBe(
      'COULD_NOT_VALIDATE',
    );
  });
});

describe('which changes a subscriber gets', () => {
  it('takes the change of an auditRecord.created, nothing from an authentication record or junk', () => {
    const c = change();
    expect(changeOf({ record: {}, change: c })).toEqual(c);
    expect(changeOf({ record: {} })).toBeUndefined();
    expect(changeOf({ change: { namespace: 'other' } })).toBeUndefined();
    expect(changeOf(null)).toBeUndefined();
    expect(changeOf('x')).toBeUndefined();
  });

  it('selects by entity type, event type and the condition on the final state (initial for deletes)', () => {
    const all = streamRequestOf({}, undefined).selection;
    const some = streamRequestOf(
      { entityType: ['identities'], eventType: ['created', 'deleted'], filter: 'name = "web"' },
      undefined,
    ).selection;
    const created = change();
    const updated = change({ eventType: 'updated', initialState: { name: 'x' }, finalState: { name: 'web' } });
    const deleted = change({ eventType: 'deleted', initialState: { name: 'web' }, finalState: null });
    const service = change({ entityType: 'services' });
    const other = change({ finalState: { name: 'db' } });
    expect([created, updated, deleted, service, other].map((c) => selects(all, c))).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
    expect([created, updated, deleted, service, other].map((c) => selects(some, c))).toEqual([
      true,
      false,
      true,
      false,
      false,
    ]);
    const missing = streamRequestOf({ filter: 'name = null' }, undefined).selection;
    expect(selects(missing, change({ eventType: 'deleted', initialState: null, finalState: null }))).toBe(true);
  });
});

describe('the subscriber queue', () => {
  it('holds messages in order up to its count bound', () => {
    const q = new SubscriberQueue(3, 1_000);
    expect([q.push('a'), q.push('b'), q.push('c'), q.push('d')]).toEqual([true, true, true, false]);
    expect(q.length).toBe(3);
    expect([q.shift(), q.shift()]).toEqual(['a', 'b']);
    expect(q.push('e')).toBe(true);
    expect([q.shift(), q.shift(), q.shift()]).toEqual(['c', 'e', undefined]);
    expect(q.length).toBe(0);
    expect(q.bytes).toBe(0);
  });

  it('holds messages up to its byte bound (UTF-8 bytes)', () => {
    const q = new SubscriberQueue(100, 10);
    expect(q.push('12345')).toBe(true);
    expect(q.push('é12')).toBe(true); // 4 bytes
    expect(q.bytes).toBe(9);
    expect(q.push('ab')).toBe(false);
    expect(q.push('a')).toBe(true);
    expect(q.push('')).toBe(true);
    q.clear();
    expect([q.length, q.bytes, q.shift()]).toEqual([0, 0, undefined]);
  });

  it('stays correct over many pushes and shifts (its storage is compacted)', () => {
    const q = new SubscriberQueue(10, 1_000_000);
    let next = 0;
    let expected = 0;
    for (let round = 0; round < 5_000; round++) {
      while (q.push(String(next))) next++;
      for (let i = 0; i < 7; i++) expect(q.shift()).toBe(String(expected++));
    }
    expect(q.length).toBe(next - expected);
  });

  it('refuses a bound below one message', () => {
    expect(() => new SubscriberQueue(0, 10)).toThrow();
    expect(() => new SubscriberQueue(1, 0)).toThrow();
  });
});
