import { type EnrollmentState, enrollmentEventTypes } from '@ziti/contracts';
import { type Database, type EventEnvelope, migrate, openDatabase, readOnlyEventSink } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../app.ts';
import { enrollmentReadModelSubscription } from './enrollment-events.transport.ts';
import { PgOutstandingEnrollments } from './outstanding-enrollments.store.ts';

/**
 * auth's read model of pki-enrollment's outstanding identity enrollments (docs/adr/0012): events
 * applied by position in any order, deletions as tombstones, rebuilt from owner pages.
 */
let database: Database;
const logger = { warn: () => undefined } as never;
const subscription = enrollmentReadModelSubscription((tx) => new PgOutstandingEnrollments(tx), logger);
const reader = () => new PgOutstandingEnrollments(database.db);

beforeAll(async () => {
  database = await openDatabase({ pgliteMemory: true });
  await migrate(database, migrations);
}, 60_000);
afterAll(async () => {
  await database?.close();
});

const state = (id: string, identityId: string | null, extra: Partial<EnrollmentState> = {}): EnrollmentState => ({
  id,
  method: identityId ? 'ott' : 'erott',
  identityId,
  edgeRouterId: identityId ? null : 'router-1',
  transitRouterId: null,
  caId: null,
  expiresAt: new Date(Date.now() + 3600_000).toISOString(),
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
  ...extra,
});

async function deliver(def: { type: string; version: number }, data: EnrollmentState, sequence: number) {
  const handler = subscription.handlers.find((h) => h.type === def.type)!;
  const event = {
    id: `pki-enrollment:${sequence}`,
    source: 'pki-enrollment',
    type: def.type,
    version: def.version,
    sequence,
    occurredAt: new Date().toISOString(),
    data,
  } as unknown as EventEnvelope;
  await database.transaction((tx) => handler.handle(tx, event, readOnlyEventSink));
}

const has = async (...ids: string[]) => [...(await reader().identitiesWithAny(ids))].sort();

describe('outstanding enrollments read model', () => {
  it('follows created, updated and deleted by position, in any order', async () => {
    const { enrollmentCreated, enrollmentUpdated, enrollmentDeleted } = enrollmentEventTypes;
    await deliver(enrollmentCreated, state('e1', 'i1'), 5);
    expect(await has('i1', 'i2')).toEqual(['i1']);
    await deliver(enrollmentUpdated, state('e1', 'i1'), 6);
    await deliver(enrollmentDeleted, state('e1', 'i1'), 7);
    expect(await has('i1')).toEqual([]);
    // A late redelivery of the creation does not bring it back (tombstone at 7).
    await deliver(enrollmentCreated, state('e1', 'i1'), 5);
    expect(await has('i1')).toEqual([]);
    // The deletion arrives before the creation.
    await deliver(enrollmentDeleted, state('e2', 'i2'), 9);
    await deliver(enrollmentCreated, state('e2', 'i2'), 8);
    expect(await has('i2')).toEqual([]);
    // Router enrollments are not kept.
    await deliver(enrollmentCreated, state('r1', null), 10);
    expect(await has('router-1')).toEqual([]);
    await deliver(enrollmentCreated, state('e3', 'i3'), 11);
    expect(await has('i1', 'i2', 'i3')).toEqual(['i3']);
  });

  it('is rebuilt from owner pages: missing rows written, absent ones tombstoned, newer rows kept', async () => {
    const { enrollmentCreated } = enrollmentEventTypes;
    await deliver(enrollmentCreated, state('p2', 'j2'), 40); // newer than the page below: kept
    await deliver(enrollmentCreated, state('p3', 'j3'), 20); // the owner no longer has it at 30
    const model = subscription.readModels![0]!;
    expect(model.entity).toBe('enrollment');
    await database.transaction((tx) =>
      model.applyPage(tx, { states: [state('p1', 'j1'), state('r9', null), { id: 'x', bad: true }], position: 30 }),
    );
    expect(await has('j1', 'j2', 'j3', 'i3')).toEqual(['j1', 'j2']);
    // Pruning drops only old tombstones at or below the watermark.
    expect(await database.transaction((tx) => model.prune!(tx, 1000))).toBe(0);
  });
});
