import {
  ApiError,
  type AuditRecordState,
  type RequestMeta,
  auditRecordCreatedState,
  authenticationEventTypes,
  maxAttemptsPerEvent,
} from '@ziti/contracts';
import {
  type Database,
  type Db,
  type EventSink,
  type EventEnvelope,
  createUnitOfWork,
  inEventTransaction,
  migrate,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { emptier, storeTargets } from '../../../../test/support/store-contract.ts';
import { migrations } from '../app.ts';
import { PgEntityStateStore, entityStatesReadModel } from '../entity-states/entity-states.store.ts';
import { AuditRecords } from '../records/records.domain.ts';
import { PgAuditRecordStore } from '../records/records.store.ts';
import { RetentionSweeper } from '../retention/retention.domain.ts';
import { PgRetentionStore } from '../retention/retention.store.ts';
import { type EntityEventKind, entityEventKinds } from './entity-kinds.domain.ts';
import { AuditTrail, type EntityEvent } from './trail.domain.ts';
import { trailSubscriptions } from './trail.transport.ts';
import type { AuditStores } from './trail.ports.ts';

/**
 * The trail on the real Postgres and on PGlite (npm start's), through its ports as the consumers drive
 * it: entity states, records keyed by their source event, `auditRecord.created` in the outbox of the same
 * transaction, the ZitiQL list, the rebuild of entity states from owner pages and the retention sweep.
 */

const kind = (type: string): EntityEventKind => {
  const found = (['auth', 'policy', 'pki-enrollment', 'inventory'] as const)
    .flatMap((s) => entityEventKinds(s))
    .find((k) => k.def.type === type);
  if (!found) throw new Error(type);
  return found;
};

const adminMeta: RequestMeta = {
  requestId: 'req-1',
  operation: 'management.updateIdentity',
  remoteAddress: '127.0.0.1',
  identityId: 'admin',
  apiSessionId: 'sess-1',
};

const identity = (o: Record<string, unknown> = {}) => ({
  id: 'i1',
  name: 'alice',
  typeId: 'User',
  isAdmin: false,
  isDefaultAdmin: false,
  roleAttributes: [],
  externalId: null,
  authPolicyId: 'default',
  disabled: false,
  disabledAt: null,
  disabledUntil: null,
  tags: {},
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...o,
});

const entityEvent = (
  source: string,
  position: number,
  state: Record<string, unknown>,
  meta: RequestMeta | null = adminMeta,
  occurredAt = new Date(Date.UTC(2026, 0, 1, 0, 0, position)).toISOString(),
): EntityEvent => ({ id: `${source}:${position}`, position, occurredAt, state, ...(meta ? { meta } : {}) });

describe.each(storeTargets)('the audit trail on %s', (target) => {
  let database: Database;
  let drop: () => Promise<void>;
  let empty: () => Promise<void>;
  let work: <T>(fn: (s: AuditStores) => Promise<T>) => Promise<T>;
  const trail = new AuditTrail({
    controllerId: 'ctrl-test',
    newId: (() => {
      let n = 0;
      return () => `rec${String(++n).padStart(6, '0')}`;
    })(),
  });
  const bind = (tx: Db, events: EventSink): AuditStores => ({
    records: new PgAuditRecordStore(tx),
    entityStates: new PgEntityStateStore(tx),
    events,
  });
  const records = () => new AuditRecords(async (fn) => fn({ records: new PgAuditRecordStore(database.db) }));
  const outbox = async () =>
    (
      await queryRows<{ type: string; payload: unknown }>(
        database.db,
        'select type, payload from outbox order by position',
      )
    ).map((r) => ({ type: r.type, payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload }));
  const apply = (type: string, event: EntityEvent) => work((s) => trail.applyEntityEvent(s, kind(type), event));

  beforeAll(async () => {
    if (target === 'postgres') {
      const db = await createTestDatabase('audit');
      database = await openDatabase({ url: db.url, poolSize: 4 });
      drop = async () => {
        await database.close();
        await db.drop();
      };
    } else {
      database = await openDatabase({ pgliteMemory: true });
      drop = () => database.close();
    }
    await migrate(database, migrations);
    empty = await emptier(database);
    work = createUnitOfWork<AuditStores>(database, undefined, 'audit', bind);
  });
  afterEach(async () => empty?.());
  afterAll(async () => drop?.());

  it('records each change made through the API with its diff, and publishes it in the same transaction', async () => {
    await apply(
      'identity.created',
      entityEvent('auth', 1, identity({ id: 'admin', name: 'Admin', isAdmin: true }), null),
    );
    const created = await apply(
      'identity.created',
      entityEvent('auth', 2, identity(), { ...adminMeta, operation: 'management.createIdentity' }),
    );
    expect(created).toMatchObject({
      category: 'change',
      operation: 'management.createIdentity',
      method: 'POST',
      actorId: 'admin',
      actorName: 'Admin',
      entityType: 'identities',
      entityId: 'i1',
      entityName: 'alice',
      action: 'created',
      eventId: 'auth:2',
    });
    const updated = await apply('identity.updated', entityEvent('auth', 3, identity({ name: 'bob', updatedAt: 'u2' })));
    expect(updated?.changes).toEqual({
      name: { before: 'alice', after: 'bob' },
      updatedAt: { before: '2026-01-01T00:00:00.000Z', after: 'u2' },
    });
    const deleted = await apply(
      'identity.deleted',
      entityEvent('auth', 4, identity({ name: 'bob', updatedAt: 'u2' }), {
        ...adminMeta,
        operation: 'management.deleteIdentity',
      }),
    );
    expect(deleted).toMatchObject({ action: 'deleted', method: 'DELETE', entityName: 'bob' });
    expect(deleted?.changes?.name).toEqual({ before: 'bob', after: null });

    // The background event (no meta) made no record; the three others made one each, and one publication each.
    const published = await outbox();
    expect(published.map((p) => p.type)).toEqual(Array(3).fill('auditRecord.created'));
    for (const p of published) auditRecordCreatedState.parse(p.payload);
    expect(published[1]!.payload).toMatchObject({
      record: { eventId: 'auth:3' },
      change: {
        namespace: 'entityChange',
        event_src_id: 'ctrl-test',
        eventId: 'auth:3',
        eventType: 'updated',
        entityType: 'identities',
        metadata: { author: { type: 'identity', id: 'admin', name: 'Admin' }, operation: 'management.updateIdentity' },
        initialState: { name: 'alice' },
        finalState: { name: 'bob' },
      },
    });
    expect(published[2]!.payload).toMatchObject({ change: { eventType: 'deleted', finalState: null } });
    const tombstone = await new PgEntityStateStore(database.db).get('identities', 'i1');
    expect(tombstone).toMatchObject({ deleted: true, position: 4 });
  });

  it('makes one record of an event applied twice', async () => {
    const event = entityEvent(
      'policy',
      7,
      {
        id: 'sp1',
        name: 'dial-all',
        type: 'Dial',
        semantic: 'AnyOf',
        identityRoles: [],
        serviceRoles: [],
        postureCheckRoles: [],
        tags: {},
        createdAt: 'c',
        updatedAt: 'c',
      },
      { ...adminMeta, operation: 'management.createServicePolicy' },
    );
    expect(await apply('servicePolicy.created', event)).toBeDefined();
    expect(await apply('servicePolicy.created', event)).toBeUndefined();
    const page = await records().list({ filter: 'eventId = "policy:7"' });
    expect(page.totalCount).toBe(1);
    expect((await outbox()).length).toBe(1);
  });

  it('knows nothing before a state it learnt later, and keeps the later state', async () => {
    const store = new PgEntityStateStore(database.db);
    await store.put(
      { entityType: 'identities', id: 'i1', source: 'auth', state: identity({ name: 'late' }), deleted: false },
      10,
    );
    const stale = await apply('identity.updated', entityEvent('auth', 9, identity({ name: 'earlier' })));
    expect(stale?.changes).toBeUndefined();
    expect((await store.get('identities', 'i1'))?.state.name).toBe('late');
    // An update of an entity never seen: its record, without a diff.
    const unknown = await apply('identity.updated', entityEvent('auth', 11, identity({ id: 'i2', name: 'new' })));
    expect(unknown).toMatchObject({ entityId: 'i2', entityName: 'new' });
    expect(unknown?.changes).toBeUndefined();
  });

  it('records secrets only as changed and certificates as fingerprints', async () => {
    const ca = (o: Record<string, unknown>) => ({
      id: 'ca1',
      name: 'ca',
      fingerprint: 'ab',
      certPem: '-----BEGIN CERTIFICATE-----\nAAECAwQ=\n-----END CERTIFICATE-----\n',
      isVerified: false,
      isAuthEnabled: true,
      isAutoCaEnrollmentEnabled: false,
      isOttCaEnrollmentEnabled: true,
      identityRoles: [],
      createdAt: 'c',
      updatedAt: 'c',
      ...o,
    });
    await apply('ca.created', entityEvent('pki-enrollment', 1, ca({})));
    const verified = await apply(
      'ca.updated',
      entityEvent('pki-enrollment', 2, ca({ isVerified: true }), { ...adminMeta, operation: 'management.verifyCa' }),
    );
    expect(verified).toMatchObject({
      method: 'POST',
      entityType: 'cas',
      changes: { isVerified: { before: false, after: true } },
    });
    const text = JSON.stringify(await outbox());
    expect(text).not.toContain('BEGIN CERTIFICATE');
    expect(text).toMatch(/sha256:[0-9a-f]{64}/);
  });

  it('records each attempt of a batch once, from its own request, naming the identity from the entity states', async () => {
    await apply('identity.created', entityEvent('auth', 1, identity({ id: 'u1', name: 'user-one' }), null));
    const before = (await outbox()).length;
    // One `authentication.attempted`: a batch, written outside any request (the envelope has no meta).
    const event = { id: 'auth:2', occurredAt: '2026-01-01T00:00:02.000Z' };
    const attempts = [
      {
        method: 'password',
        outcome: 'succeeded' as const,
        identityId: 'u1',
        apiSessionId: 's9',
        at: 'not a time',
        meta: { requestId: 'r9', operation: 'client.authenticate', remoteAddress: '::ffff:127.0.0.1' },
      },
      {
        method: 'password',
        outcome: 'failed' as const,
        reason: 'INVALID_AUTH',
        at: '2026-01-01T00:00:01.500Z',
        meta: { requestId: 'r10', operation: 'management.authenticate', remoteAddress: '10.0.0.7' },
      },
      {
        method: 'mfa',
        outcome: 'failed' as const,
        identityId: 'u1',
        identityName: 'as-reported',
        apiSessionId: 's9',
        reason: 'INVALID_AUTH',
        at: '2026-01-01T00:00:01.700Z',
        meta: {
          requestId: 'r11',
          operation: 'client.authenticateMfa',
          remoteAddress: '::ffff:127.0.0.1',
          identityId: 'u1',
          apiSessionId: 's9',
        },
      },
    ];
    const made = await work((s) => trail.applyAuthenticationAttempts(s, attempts, event));
    expect(made).toHaveLength(3);
    expect(made[0]).toMatchObject({
      category: 'authentication',
      action: 'succeeded',
      authMethod: 'password',
      operation: 'client.authenticate',
      method: 'POST',
      requestId: 'r9',
      remoteAddress: '::ffff:127.0.0.1',
      actorId: 'u1',
      actorName: 'user-one',
      apiSessionId: 's9',
      at: event.occurredAt,
      eventId: 'auth:2#0',
    });
    expect(made[1]).toEqual({
      id: expect.any(String),
      at: '2026-01-01T00:00:01.500Z',
      category: 'authentication',
      operation: 'management.authenticate',
      method: 'POST',
      requestId: 'r10',
      remoteAddress: '10.0.0.7',
      action: 'failed',
      authMethod: 'password',
      reason: 'INVALID_AUTH',
      eventId: 'auth:2#1',
    });
    expect(made[2]).toMatchObject({
      operation: 'client.authenticateMfa',
      requestId: 'r11',
      actorId: 'u1',
      actorName: 'as-reported',
      eventId: 'auth:2#2',
    });
    // One `auditRecord.created` per record, in the batch's order.
    const published = (await outbox()).slice(before);
    expect(published.map((e) => e.type)).toEqual(Array(3).fill('auditRecord.created'));
    expect(published.map((e) => auditRecordCreatedState.parse(e.payload).record)).toEqual(made);
    // Delivered again (a redelivery, or another replica): no record and no publication twice.
    expect(await work((s) => trail.applyAuthenticationAttempts(s, attempts, event))).toEqual([]);
    expect(await work((s) => trail.applyAuthenticationAttempts(s, attempts.slice(0, 1), event))).toEqual([]);
    expect((await outbox()).length).toBe(before + 3);
    const listed = await records().list({ filter: 'category = "authentication"' });
    expect(listed.items.map((r) => r.eventId).sort()).toEqual(['auth:2#0', 'auth:2#1', 'auth:2#2']);
    // The next batch's attempts are records of their own.
    const next = await work((s) =>
      trail.applyAuthenticationAttempts(s, attempts.slice(1, 2), { id: 'auth:3', occurredAt: event.occurredAt }),
    );
    expect(next.map((r) => r.eventId)).toEqual(['auth:3#0']);
  });

  it('stores a batch of 500 attempts in one insert and publishes each once; a redelivery makes no duplicate', async () => {
    await apply('identity.created', entityEvent('auth', 1, identity({ id: 'u1', name: 'user-one' }), null));
    const before = (await outbox()).length;
    const attempts = Array.from({ length: maxAttemptsPerEvent }, (_, i) => ({
      method: 'password',
      outcome: i % 2 ? ('failed' as const) : ('succeeded' as const),
      ...(i % 3 ? { identityId: 'u1' } : {}),
      at: '2026-01-01T00:00:08.000Z',
      meta: { requestId: `rb-${i}`, operation: 'client.authenticate', remoteAddress: '127.0.0.1' },
    }));
    const event = { id: 'auth:8', occurredAt: '2026-01-01T00:00:08.100Z' };
    // The store port, spied on: each `insertMany` is one statement.
    const spied = (s: AuditStores) => {
      const calls = { insertMany: [] as number[], insert: 0, get: 0 };
      const records = s.records;
      const entityStates = s.entityStates;
      const stores: AuditStores = {
        ...s,
        records: {
          insert: (r) => (calls.insert++, records.insert(r)),
          insertMany: (rs) => (calls.insertMany.push(rs.length), records.insertMany(rs)),
          list: (i) => records.list(i),
        },
        entityStates: Object.assign(Object.create(entityStates) as typeof entityStates, {
          get: (...a: Parameters<typeof entityStates.get>) => (calls.get++, entityStates.get(...a)),
        }),
      };
      return { stores, calls };
    };
    const applyBatch = () =>
      work(async (s) => {
        const { stores, calls } = spied(s);
        return { made: await trail.applyAuthenticationAttempts(stores, attempts, event), calls };
      });
    const first = await applyBatch();
    expect(first.calls).toEqual({ insertMany: [maxAttemptsPerEvent], insert: 0, get: 1 });
    expect(first.made.map((r) => r.eventId)).toEqual(attempts.map((_, i) => `auth:8#${i}`));
    expect(first.made[1]).toMatchObject({ actorId: 'u1', actorName: 'user-one', requestId: 'rb-1' });
    const published = (await outbox()).slice(before);
    expect(published.map((e) => auditRecordCreatedState.parse(e.payload).record)).toEqual(first.made);
    // Redelivered: the same one statement stores nothing, and nothing is published.
    const again = await applyBatch();
    expect(again.calls.insertMany).toEqual([maxAttemptsPerEvent]);
    expect(again.made).toEqual([]);
    expect((await outbox()).length).toBe(before + maxAttemptsPerEvent);
    expect((await records().list({ filter: 'category = "authentication"', limit: 1 })).totalCount).toBe(
      maxAttemptsPerEvent,
    );
  });

  it('the consumer hands each batch to the trail: a record per attempt; a batch its contract refuses makes none', async () => {
    const def = authenticationEventTypes.authenticationAttempted;
    const auth = trailSubscriptions({ trail, stores: bind, readModels: () => [] }).find((x) => x.source === 'auth')!;
    const handler = auth.handlers.find((h) => h.type === def.type)!;
    const attempt = (i: number) => ({
      method: 'cert',
      outcome: 'failed' as const,
      reason: 'INVALID_AUTH',
      at: '2026-01-01T00:00:05.000Z',
      meta: { requestId: `rq-${i}`, operation: 'client.authenticate', remoteAddress: '127.0.0.1' },
    });
    const envelope = (sequence: number, attempts: unknown[]): EventEnvelope => ({
      id: `auth:${sequence}`,
      type: def.type,
      version: def.version,
      source: 'auth',
      sequence,
      occurredAt: '2026-01-01T00:00:05.100Z',
      data: { attempts },
    });
    const deliver = (e: EventEnvelope) =>
      inEventTransaction(database, 'audit', undefined, (tx, events) => handler.handle(tx, e, events));
    await deliver(envelope(5, [attempt(1), attempt(2)]));
    await deliver(envelope(5, [attempt(1), attempt(2)]));
    const page = await records().list({ filter: 'category = "authentication" sort by eventId' });
    expect(page.items.map((r) => [r.eventId, r.requestId, r.authMethod])).toEqual([
      ['auth:5#0', 'rq-1', 'cert'],
      ['auth:5#1', 'rq-2', 'cert'],
    ]);
    const tooMany = Array.from({ length: maxAttemptsPerEvent + 1 }, (_, i) => attempt(i));
    await expect(deliver(envelope(6, tooMany))).rejects.toThrow(/does not match its contract/);
    await expect(deliver(envelope(7, []))).rejects.toThrow(/does not match its contract/);
    expect((await records().list({ filter: 'category = "authentication"' })).totalCount).toBe(2);
    expect((await outbox()).length).toBe(2);
  });

  it('lists with ZitiQL: newest first by default, filters, sort, paging; a bad filter is a 400', async () => {
    for (let i = 1; i <= 12; i++)
      await apply(
        'service.created',
        entityEvent(
          'inventory',
          i,
          {
            id: `s${i}`,
            name: `svc-${i}`,
            terminatorStrategy: 'smartrouting',
            roleAttributes: [],
            configs: [],
            encryptionRequired: true,
            maxIdleTimeMillis: 0,
            tags: {},
            createdAt: 'c',
            updatedAt: 'c',
          },
          { ...adminMeta, operation: 'management.createService', identityId: i % 2 ? 'admin' : 'other' },
        ),
      );
    const first = await records().list({});
    expect(first.totalCount).toBe(12);
    expect(first.pagination).toEqual({ limit: 10, offset: 0 });
    expect(first.items.map((r) => r.entityName)).toEqual(Array.from({ length: 10 }, (_, i) => `svc-${12 - i}`));
    expect(first.filterableFields).toEqual(
      expect.arrayContaining(['at', 'actorId', 'entityType', 'eventId', 'requestId']),
    );
    const mine = await records().list({
      filter: 'actorId = "other" and entityName contains "svc-1" sort by at asc',
      limit: 5,
    });
    expect(mine.items.map((r) => r.entityName)).toEqual(['svc-10', 'svc-12']);
    const paged = await records().list({ limit: 5, offset: 10 });
    expect(paged.items.map((r) => r.entityId)).toEqual(['s2', 's1']);
    const since = await records().list({ filter: 'at >= datetime(2026-01-01T00:00:11Z)' });
    expect(since.items.map((r) => r.entityId)).toEqual(['s12', 's11']);
    const sorted = await records().list({ sort: 'entityName asc', limit: 2 });
    expect(sorted.items.map((r) => r.entityName)).toEqual(['svc-1', 'svc-10']);
    for (const filter of ['actorId = ', 'nope = "x"']) {
      const err = await records()
        .list({ filter })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).code).toBe('INVALID_FILTER');
    }
  });

  it('rebuilds entity states from owner pages, over older rows only, tombstoning what a page lacks', async () => {
    const store = new PgEntityStateStore(database.db);
    const model = entityStatesReadModel('auth', 'identity', 'identities');
    await store.put(
      { entityType: 'identities', id: 'a', source: 'auth', state: identity({ id: 'a', name: 'old' }), deleted: false },
      3,
    );
    await store.put(
      { entityType: 'identities', id: 'b', source: 'auth', state: identity({ id: 'b' }), deleted: false },
      4,
    );
    await store.put(
      {
        entityType: 'identities',
        id: 'c',
        source: 'auth',
        state: identity({ id: 'c', name: 'newer' }),
        deleted: false,
      },
      9,
    );
    await store.put(
      { entityType: 'identities', id: 'z', source: 'auth', state: identity({ id: 'z' }), deleted: false },
      2,
    );
    await database.transaction((tx) =>
      model.applyPage(tx, {
        states: [identity({ id: 'a', name: 'paged' }), identity({ id: 'c', name: 'paged' }), identity({ id: 'd' })],
        position: 5,
        upTo: 'd',
      }),
    );
    expect(await store.get('identities', 'a')).toMatchObject({ state: { name: 'paged' }, position: 5, deleted: false });
    expect(await store.get('identities', 'b')).toMatchObject({ deleted: true, position: 5 });
    expect(await store.get('identities', 'c')).toMatchObject({ state: { name: 'newer' }, position: 9 });
    expect(await store.get('identities', 'd')).toMatchObject({ position: 5, deleted: false });
    // Outside the page's id range: untouched.
    expect(await store.get('identities', 'z')).toMatchObject({ deleted: false, position: 2 });
  });

  it('sweeps records past their retention and tombstones no event can still need', async () => {
    const now = new Date();
    const aged = (days: number) => new Date(now.getTime() - days * 86_400_000).toISOString();
    const base: Omit<AuditRecordState, 'id' | 'eventId' | 'at'> = {
      category: 'change',
      operation: 'management.createService',
      requestId: 'r',
      action: 'created',
    };
    const recs = new PgAuditRecordStore(database.db);
    for (const [i, days] of [100, 95, 91, 89, 1].entries())
      await recs.insert({ ...base, id: `r${i}`, eventId: `inventory:${i}`, at: aged(days) });
    const sweeper = new RetentionSweeper(new PgRetentionStore(database.db), {
      retentionDays: 90,
      batchSize: 2,
      tombstoneSeconds: 0,
    });
    const states = new PgEntityStateStore(database.db);
    await states.put(
      { entityType: 'services', id: 'gone', source: 'inventory', state: { id: 'gone' }, deleted: true },
      5,
    );
    await states.put(
      { entityType: 'services', id: 'later', source: 'inventory', state: { id: 'later' }, deleted: true },
      8,
    );
    await queryRows(
      database.db,
      `insert into event_cursors (consumer, source, watermark) values ('audit-from-inventory', 'inventory', 6)`,
    );
    expect(await sweeper.sweep()).toEqual({ records: 3, tombstones: 1 });
    expect((await records().list({ sort: 'at asc' })).items.map((r) => r.id)).toEqual(['r3', 'r4']);
    expect(await states.get('services', 'gone')).toBeNull();
    expect(await states.get('services', 'later')).not.toBeNull();
    expect(await sweeper.sweep()).toEqual({ records: 0, tombstones: 0 });
  });
});
