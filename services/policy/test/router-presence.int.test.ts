import { eventTypes, inventoryEventTypes, routerPresenceEventTypes } from '@ziti/contracts';
import { type Database, createReader, createUnitOfWork } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgClientEdgeRouters } from '../src/client-edge-routers/client-edge-routers.store.ts';
import { PgAdvice } from '../src/policy-advice/policy-advice.store.ts';
import { ClientEdgeRouterService } from '../src/client-edge-routers/client-edge-routers.domain.ts';
import {
  currentIdentityEdgeRouterDetail,
  serviceEdgeRouterDetail,
} from '../src/client-edge-routers/client-edge-routers.mapper.ts';
import { PolicyAdvisor } from '../src/policy-advice/policy-advice.domain.ts';
import { policyAdviceDetail } from '../src/policy-advice/policy-advice.mapper.ts';
import { PostureEvaluation } from '../src/posture/posture-evaluation.domain.ts';
import { PgPostureData } from '../src/posture/posture-data.store.ts';
import { presenceShown } from '@ziti/contracts';
import { RelationService } from '../src/relations/relations.domain.ts';
import { PgRelations } from '../src/relations/relations.store.ts';
import { SessionCreationBatcher } from '../src/sessions/session-creation-batcher.store.ts';
import { SessionService } from '../src/sessions/sessions.domain.ts';
import { sessionDetail } from '../src/sessions/sessions.mapper.ts';
import { PgSessions } from '../src/sessions/sessions.store.ts';
import {
  identityFixture,
  offlinePresenceFixture,
  policyBed,
  policyTestDatabase,
  presenceFixture,
  routerFixture,
  serviceFixture,
} from './support.ts';

/**
 * Every read of policy that shows edge routers shows their presence (inventory's
 * `routerPresence.changed`), as the reference shows its broker's router state: an online router with
 * what it announced, an offline one and one that never connected alike (offline, no hostname, no
 * URLs, `SYNC_UNKNOWN`, empty version info). Real Postgres, the domain services and mappers as the
 * transports call them.
 */
let database: Database;
let drop: () => Promise<void>;
let bed: ReturnType<typeof policyBed>;

// Ids and names ordered so that "connected first" differs from both id and name order.
const on = { id: 'r3-on', name: 'er-on' };
const off = { id: 'r2-off', name: 'er-off' };
const never = { id: 'r1-never', name: 'er-never' };
const caller = { identityId: 'pi-1', isAdmin: false, apiSessionId: 'pas-1' };
let erpId: string;
let serpId: string;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('preads', 6));
  bed = policyBed(database);
  await bed.deliver(eventTypes.identityCreated, 'auth', identityFixture('pi-1', ['eng']));
  await bed.deliver(inventoryEventTypes.serviceCreated, 'inventory', serviceFixture('ps-1', ['web']));
  for (const r of [on, off, never])
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', {
      ...routerFixture(r.id, ['edge']),
      name: r.name,
    });
  const changed = routerPresenceEventTypes.routerPresenceChanged;
  await bed.deliver(changed, 'inventory', presenceFixture(on.id));
  await bed.deliver(changed, 'inventory', presenceFixture(off.id));
  await bed.deliver(changed, 'inventory', offlinePresenceFixture(off.id));
  const { policies } = bed.engine;
  await policies.service.create({
    name: 'p-dial',
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: ['#eng'],
    serviceRoles: ['#web'],
    postureCheckRoles: [],
  });
  ({ id: erpId } = await policies.edgeRouter.create({
    name: 'p-erp',
    semantic: 'AnyOf',
    identityRoles: ['#eng'],
    edgeRouterRoles: ['#edge'],
  }));
  ({ id: serpId } = await policies.serviceEdgeRouter.create({
    name: 'p-serp',
    semantic: 'AnyOf',
    serviceRoles: ['#web'],
    edgeRouterRoles: ['#edge'],
  }));
});
afterAll(async () => drop?.());

const onUrls = { tls: `tls://${on.id}.example:3022` };
/** What every read shows of the offline and the never-connected router. */
const noConnection = { isOnline: false, hostname: '', supportedProtocols: {}, syncStatus: 'SYNC_UNKNOWN' };

describe('router presence in the reads that show routers', () => {
  it('client /current-identity/edge-routers: hostname always "", online state and URLs from the presence', async () => {
    const svc = new ClientEdgeRouterService(createReader(database, (db) => new PgClientEdgeRouters(db)));
    const page = await svc.currentIdentityEdgeRouters(caller, { sort: 'id' });
    const shown = page.items.map(currentIdentityEdgeRouterDetail);
    expect(shown.map((r) => r.id)).toEqual([never.id, off.id, on.id]);
    expect(shown[2]).toMatchObject({
      hostname: '',
      isOnline: true,
      supportedProtocols: onUrls,
      syncStatus: 'SYNC_DONE',
    });
    for (const r of shown.slice(0, 2)) expect(r).toMatchObject(noConnection);
  });

  it('client /services/{id}/edge-routers: connected first, with the hostname and URLs an online router announced', async () => {
    const svc = new ClientEdgeRouterService(createReader(database, (db) => new PgClientEdgeRouters(db)));
    const page = await svc.serviceEdgeRouters(caller, 'ps-1', undefined, {});
    const shown = page.items.map(serviceEdgeRouterDetail);
    expect(shown.map((r) => r.name)).toEqual([on.name, never.name, off.name]);
    expect(shown[0]).toEqual({
      hostname: `${on.id}.example`,
      isOnline: true,
      name: on.name,
      supportedProtocols: onUrls,
      syncStatus: 'SYNC_DONE',
      cost: 0,
      noTraversal: false,
      disabled: false,
    });
    for (const r of shown.slice(1)) expect(r).toMatchObject(noConnection);
  });

  it('an edge session’s edgeRouters on creation, detail and list: every shared router, connected first, urls = supportedProtocols', async () => {
    const sessions = new SessionService(
      createUnitOfWork(database, undefined, 'policy', (tx) => new PgSessions(tx)),
      createReader(database, (db) => new PgSessions(db, new SessionCreationBatcher(db))),
      new PostureEvaluation(createReader(database, (db) => new PgPostureData(db))),
      { routePaths: async () => undefined },
      createReader(database, (db) => new PgPostureData(db)),
    );
    const expectRouters = (routers: ReturnType<typeof sessionDetail>['edgeRouters']) => {
      expect(routers.map((r) => r.name)).toEqual([on.name, never.name, off.name]);
      expect(routers[0]).toMatchObject({
        hostname: `${on.id}.example`,
        isOnline: true,
        syncStatus: 'SYNC_DONE',
        supportedProtocols: onUrls,
        urls: onUrls,
      });
      for (const r of routers.slice(1)) expect(r).toMatchObject({ ...noConnection, urls: {} });
    };
    const { view } = await sessions.create(caller, { serviceId: 'ps-1', type: 'Dial' });
    expectRouters(sessionDetail(view).edgeRouters);
    expectRouters(sessionDetail(await sessions.get(caller, view.session.id)).edgeRouters);
    expectRouters(
      sessionDetail(await sessions.get({ identityId: 'admin', isAdmin: true }, view.session.id, true)).edgeRouters,
    );
    const listed = await sessions.list(caller, {});
    expect(listed.items).toHaveLength(1);
    expectRouters(sessionDetail(listed.items[0]!).edgeRouters);
  });

  it('related routers (/identities|/services/{id}/edge-routers, the policies’ edge routers): listed, filtered and sorted by their presence', async () => {
    // The routers are shown as inventory's details (`edgeRouterDetails`); the page is policy's.
    const noDetails = {
      identities: () => Promise.reject(new Error('not used')),
      edgeRouters: () => Promise.reject(new Error('not used')),
    };
    const relations = new RelationService(
      createReader(database, (db) => new PgRelations(db)),
      noDetails,
    );
    const lists = [
      await relations.edgeRouters({ from: 'identity', id: 'pi-1' }, { sort: 'id' }),
      await relations.edgeRouters({ from: 'service', id: 'ps-1' }, { sort: 'id' }),
      await relations.edgeRouters({ from: 'edgeRouterPolicy', id: erpId }, { sort: 'id' }),
      await relations.edgeRouters({ from: 'serviceEdgeRouterPolicy', id: serpId }, { sort: 'id' }),
    ];
    for (const page of lists) {
      const shown = page.items.map((r) => ({ id: r.id, ...presenceShown(r.presence) }));
      expect(shown.map((r) => r.id)).toEqual([never.id, off.id, on.id]);
      expect(shown[2]).toMatchObject({
        hostname: `${on.id}.example`,
        isOnline: true,
        supportedProtocols: onUrls,
        syncStatus: 'SYNC_DONE',
        versionInfo: { version: 'v1.1.9', revision: 'f61924b', buildDate: '2024-08-01', os: 'linux', arch: 'amd64' },
      });
      // The offline router's last version info and sync status are not shown: the reference drops
      // a router's state when it disconnects (the detail shows no version info as empty strings).
      for (const r of shown.slice(0, 2)) expect(r).toMatchObject({ ...noConnection, versionInfo: null });
    }
    // The reference's `online` and `connected` symbols filter and sort them.
    const onlineOnly = await relations.edgeRouters({ from: 'identity', id: 'pi-1' }, { filter: 'online = true' });
    expect(onlineOnly.items.map((r) => r.id)).toEqual([on.id]);
    const offline = await relations.edgeRouters(
      { from: 'service', id: 'ps-1' },
      { filter: 'connected = false', sort: 'id' },
    );
    expect(offline.items.map((r) => r.id)).toEqual([never.id, off.id]);
    const connectedFirst = await relations.edgeRouters({ from: 'identity', id: 'pi-1' }, { sort: 'connected desc' });
    expect(connectedFirst.items.map((r) => r.id)).toEqual([on.id, never.id, off.id]);
  });

  it('policy advice: each common router’s isOnline (what `ziti edge policy-advisor` counts as online)', async () => {
    const advice = policyAdviceDetail(
      await new PolicyAdvisor(createReader(database, (db) => new PgAdvice(db))).analyze('pi-1', 'ps-1'),
    );
    expect(advice.commonRouters.map((r) => [r.name, r.isOnline])).toEqual([
      [never.name, false],
      [off.name, false],
      [on.name, true],
    ]);
    expect(advice.commonRouters.filter((r) => r.isOnline)).toHaveLength(1);
    expect(advice).toMatchObject({ identityRouterCount: 3, serviceRouterCount: 3, isDialAllowed: true });
  });
});
