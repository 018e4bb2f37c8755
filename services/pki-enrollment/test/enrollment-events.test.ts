import { enrollmentState, eventTypes, maintenanceActions } from '@ziti/contracts';
import {
  type Database,
  SecretBox,
  createUnitOfWork,
  inEventTransaction,
  migrate,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../src/app.ts';
import { authEventSubscription } from '../src/shared/auth-events.transport.ts';
import { pgMaintenance } from '../src/shared/maintenance.store.ts';
import { maintenanceCalls } from '../src/shared/maintenance.transport.ts';
import { AuthEventEffects } from '../src/shared/auth-event-effects.domain.ts';
import { ControllerPkiService } from '../src/controller-pki/controller-pki.domain.ts';
import { EnrollmentJwtIssuer } from '../src/enrollments/enrollment-jwt.domain.ts';
import { EnrollmentService } from '../src/enrollments/enrollments.domain.ts';
import { PkiMaintenance } from '../src/shared/maintenance.domain.ts';
import type { PkiStores } from '../src/shared/stores.ports.ts';
import { type RouterDirectory, RouterEnrollmentService } from '../src/router-enrollments/router-enrollments.domain.ts';
import { PgPkiMaterialStore } from '../src/controller-pki/pki-material.store.ts';
import { PgCaStore } from '../src/cas/cas.store.ts';
import { PgEnrollmentStore, enrollmentStatesPage } from '../src/enrollments/enrollments.store.ts';
import { PgSessionCertificateStore } from '../src/session-certificates/session-certificates.store.ts';
import { FakeCredentials } from './fake-credentials.ts';

/**
 * Every write of an enrollment publishes `enrollment.created|updated|deleted` in its transaction,
 * with the non-secret state only, and `entityStates` answers the same states (docs/adr/0012).
 */
let database: Database;
let box: SecretBox;
let enrollments: EnrollmentService;
let routers: RouterEnrollmentService;
const credentials = new FakeCredentials();
const directory: RouterDirectory = {
  enrolled: async () => undefined,
  byFingerprint: async () => null,
  certificateChanged: async () => undefined,
  existingEdgeRouters: async (ids) => new Set(ids),
};

beforeAll(async () => {
  database = await openDatabase({ pgliteMemory: true });
  await migrate(database, migrations);
  box = new SecretBox(SecretBox.generateSecret());
  const address = 'ctrl.example.test:1280';
  const pki = new ControllerPkiService(new PgPkiMaterialStore(database.db), box, { advertisedAddress: address });
  await pki.initialize();
  const work = createUnitOfWork<PkiStores>(database, undefined, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx),
    events,
  }));
  const jwts = new EnrollmentJwtIssuer(pki, address);
  enrollments = new EnrollmentService(work, jwts, credentials, { durationMinutes: 180 });
  routers = new RouterEnrollmentService(work, enrollments, pki, directory, { durationMinutes: 180, certDays: 365 });
}, 60_000);

afterAll(async () => {
  await database?.close();
});

interface OutboxRow {
  position: string | number;
  type: string;
  version: number;
  payload: unknown;
}

let seen = 0;
/** The enrollment events written since the last call, in position order. */
async function newEvents(): Promise<{ type: string; state: ReturnType<typeof enrollmentState.parse>; raw: string }[]> {
  const rows = await queryRows<OutboxRow>(
    database.db,
    `select position, type, version, payload from outbox where position > $1 and type like 'enrollment.%' order by position`,
    [seen],
  );
  const [last] = await queryRows<{ last: string | number }>(
    database.db,
    'select last from event_position where id = 1',
  );
  seen = Number(last?.last ?? 0);
  return rows.map((r) => {
    expect(r.version).toBe(1);
    const payload = typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload;
    // Exactly the published shape: nothing else (no token, no JWT, no username) leaves.
    expect(Object.keys(payload as object).sort()).toEqual(Object.keys(enrollmentState.shape).sort());
    return { type: r.type, state: enrollmentState.parse(payload), raw: JSON.stringify(payload) };
  });
}

async function secretsOf(id: string): Promise<string[]> {
  const e = await enrollments.get(id);
  return [e.token, e.jwt];
}

describe('enrollment events', () => {
  it('are written with every write of an enrollment, without its token or JWT', async () => {
    await newEvents();
    const identityId = 'ident-events-1';
    credentials.addIdentity(identityId);

    // created with an identity
    const ids = await enrollments.createForIdentity(identityId, [
      { method: 'ott' },
      { method: 'updb', username: 'events-user' },
    ]);
    let events = await newEvents();
    expect(events.map((e) => [e.type, e.state.id])).toEqual(ids.map((id) => ['enrollment.created', id]));
    expect(events[0]!.state).toMatchObject({ method: 'ott', identityId, edgeRouterId: null, caId: null });
    for (const id of ids)
      for (const secret of await secretsOf(id)) expect(events.map((e) => e.raw).join()).not.toContain(secret);

    // refreshed: a new token, the same enrollment, a later expiry
    const before = await enrollments.get(ids[0]!);
    const refreshed = await enrollments.refresh(ids[0]!, new Date(Date.now() + 3 * 3600_000).toISOString());
    events = await newEvents();
    expect(events.map((e) => e.type)).toEqual(['enrollment.updated']);
    expect(events[0]!.state).toMatchObject({ id: ids[0], identityId, expiresAt: refreshed.expiresAt.toISOString() });
    expect(events[0]!.state.createdAt).toBe(before.createdAt.toISOString());
    expect(events[0]!.raw).not.toContain(refreshed.token);

    // the management create and delete
    const other = 'ident-events-2';
    credentials.addIdentity(other);
    const created = await enrollments.create({
      method: 'ott',
      identityId: other,
      expiresAt: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect((await newEvents()).map((e) => [e.type, e.state.id])).toEqual([['enrollment.created', created.id]]);
    await enrollments.delete(created.id);
    expect((await newEvents()).map((e) => [e.type, e.state.id, e.state.identityId])).toEqual([
      ['enrollment.deleted', created.id, other],
    ]);

    // a compensation by auth deletes some of an identity's enrollments
    await enrollments.deleteForIdentity(identityId, [ids[1]!]);
    expect((await newEvents()).map((e) => [e.type, e.state.id])).toEqual([['enrollment.deleted', ids[1]]]);

    // routers: issued, issued again (the old one cleared), revoked
    const first = await routers.issue('router-events-1', 'edge');
    expect((await newEvents()).map((e) => [e.type, e.state.id, e.state.edgeRouterId])).toEqual([
      ['enrollment.created', first.id, 'router-events-1'],
    ]);
    const second = await routers.issue('router-events-1', 'edge');
    expect((await newEvents()).map((e) => [e.type, e.state.id])).toEqual([
      ['enrollment.deleted', first.id],
      ['enrollment.created', second.id],
    ]);
    await routers.revoke('router-events-1');
    expect((await newEvents()).map((e) => [e.type, e.state.id])).toEqual([['enrollment.deleted', second.id]]);

    // auth deleted the identity: its enrollments go, published with the consumer's commit
    const subscription = authEventSubscription(new AuthEventEffects(), (tx, events) => ({
      enrollments: new PgEnrollmentStore(tx, box, events),
      sessionCertificates: new PgSessionCertificateStore(tx),
    }));
    const handler = subscription.handlers.find((h) => h.type === eventTypes.identityDeleted.type)!;
    await inEventTransaction(database, 'pki-enrollment', undefined, (tx, events) =>
      handler.handle(
        tx,
        {
          id: 'auth:1',
          source: 'auth',
          type: eventTypes.identityDeleted.type,
          version: 1,
          sequence: 1,
          occurredAt: new Date().toISOString(),
          data: { id: identityId },
        } as never,
        events,
      ),
    );
    expect((await newEvents()).map((e) => [e.type, e.state.id])).toEqual([['enrollment.deleted', ids[0]]]);
  });

  it('entityStates pages carry the same states, at the owner position', async () => {
    const identityId = 'ident-events-3';
    credentials.addIdentity(identityId);
    const ids = await enrollments.createForIdentity(identityId, [{ method: 'ott' }]);
    const events = await newEvents();
    const calls = maintenanceCalls(pgMaintenance(database, new PkiMaintenance(routers, enrollmentStatesPage)));
    const page = (await calls[maintenanceActions.entityStates]!({ type: 'enrollment', limit: 500 })) as {
      states: Record<string, unknown>[];
      position: number;
    };
    expect(page.position).toBe(seen);
    expect(page.states).toEqual([events[0]!.state]);
    expect(page.states.map((s) => s.id)).toEqual(ids);
    const byIds = (await calls[maintenanceActions.entityStates]!({ type: 'enrollment', ids: [...ids, 'nope'] })) as {
      states: unknown[];
    };
    expect(byIds.states).toEqual([events[0]!.state]);
  });
});
