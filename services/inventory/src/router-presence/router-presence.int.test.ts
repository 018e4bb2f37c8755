import {
  type OperationRequest,
  type RouterPresenceReport,
  entityStatesReplySchema,
  fabricCallNames,
  inventoryCallNames,
  maintenanceActions,
  routerPresenceEventTypes,
  routerPresenceState,
} from '@ziti/contracts';
import { type CallTable, type Database, type Db, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../../test/support/infra.ts';
import { storeTargets } from '../../../../test/support/store-contract.ts';
import { FakeIdentityDirectory, inventoryDatabase, outboxEvents } from '../../test/support.ts';
import { AjvSchemaValidator } from '../config-types/ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from '../config-types/config-types.domain.ts';
import { InventoryMaintenance } from '../maintenance/inventory-maintenance.domain.ts';
import { pgMaintenance } from '../maintenance/maintenance.store.ts';
import { maintenanceCalls } from '../maintenance/maintenance.transport.ts';
import { RouterService } from '../routers/routers.domain.ts';
import { routerOperations } from '../routers/routers.transport.ts';
import { ServiceCatalog } from '../services/services.domain.ts';
import { inventoryCalls } from '../shared/calls.transport.ts';
import type { RouterKind } from '../shared/model.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { TerminatorService } from '../terminators/terminators.domain.ts';
import { RouterPresenceSweeper } from './router-presence-sweeper.domain.ts';
import { RouterPresenceService } from './router-presence.domain.ts';

/**
 * Router presence as fabric reports it (`fabric.reportRouterPresence`, `renewRouterLeases`), the
 * sweeper that turns lapsed leases offline, and the router reads and state pages that show it, on
 * the real Postgres and on PGlite (what `npm start` uses).
 */

const t0 = '2026-01-01T00:00:00.000Z';
const t1 = '2026-01-01T00:00:05.000Z';
const version = { version: 'v1.6.0', revision: 'abc123', buildDate: '2026-01-01', os: 'linux', arch: 'amd64' };

const report = (routerId: string, o: Partial<RouterPresenceReport> = {}): RouterPresenceReport => ({
  routerId,
  connectionId: 'c1',
  replicaId: 'fabric-1',
  connectedAt: t0,
  isOnline: true,
  hostname: 'er.example.com',
  supportedProtocols: { tls: 'tls://er.example.com:3022' },
  versionInfo: version,
  syncStatus: 'SYNC_DONE',
  leaseMs: 30_000,
  ...o,
});

/** The JSON body of an operation's reply. */
const bodyOf = (reply: unknown) => (reply as { body: unknown }).body;

const request = (o: Partial<OperationRequest> = {}): OperationRequest => ({
  requestId: 'r',
  api: 'management',
  operationId: 'op',
  params: {},
  query: {},
  headers: {},
  remoteAddress: '127.0.0.1',
  ...o,
});

describe.each(storeTargets)('router presence on %s', (target) => {
  let database: Database;
  let work: UnitOfWork;
  let read: (tx: Db) => InventoryStores;
  let drop: () => Promise<void>;
  let routers: RouterService;
  let presence: RouterPresenceService;
  let calls: CallTable;

  beforeAll(async () => {
    ({ database, work, read, drop } = await inventoryDatabase(target));
    routers = new RouterService(work);
    presence = new RouterPresenceService(work);
    calls = inventoryCalls(
      routers,
      new TerminatorService(work),
      new ServiceCatalog(work),
      presence,
      new ConfigTypeService(work, new AjvSchemaValidator()),
    );
  }, 60_000);
  afterAll(async () => {
    await drop?.();
  });

  const call = (action: string, payload: unknown) => calls[action]!(payload);
  const reportPresence = async (r: RouterPresenceReport) =>
    (await call(fabricCallNames.reportRouterPresence, r)) as { applied: boolean };
  const renew = async (connections: { routerId: string; connectionId: string }[], leaseMs = 30_000) =>
    (
      (await call(fabricCallNames.renewRouterLeases, { replicaId: 'fabric-1', connections, leaseMs })) as {
        stale: { routerId: string; connectionId: string }[];
      }
    ).stale;
  const newRouter = async (kind: RouterKind = 'edge') => (await routers.create(kind, { name: uniqueName('r') })).id;
  /** The `routerPresence.changed` events of a router, oldest first, each checked against its schema. */
  const changes = async (routerId: string) =>
    (await outboxEvents(database))
      .filter((e) => e.type === routerPresenceEventTypes.routerPresenceChanged.type && e.payload.id === routerId)
      .map((e) => routerPresenceState.parse(e.payload));
  const leaseOf = async (routerId: string) =>
    new Date(
      String(
        (
          await queryRows<{ lease_until: unknown }>(
            database.db,
            'select lease_until from router_presence where router_id = $1',
            [routerId],
          )
        )[0]?.lease_until,
      ),
    );
  const lapseLease = (routerId: string) =>
    queryRows(
      database.db,
      `update router_presence set lease_until = now() - interval '1 second' where router_id = $1`,
      [routerId],
    );
  const current = async (routerId: string) => (await presence.of([routerId])).get(routerId);

  it('a first report applies and is announced; the same state again, or a renewal, is not', async () => {
    const id = await newRouter();
    expect(await reportPresence(report(id, { syncStatus: 'SYNC_HELLO' }))).toEqual({ applied: true });
    const [first, ...rest] = await changes(id);
    expect(rest).toEqual([]);
    expect(first).toMatchObject({
      id,
      kind: 'edge',
      isOnline: true,
      hostname: 'er.example.com',
      supportedProtocols: { tls: 'tls://er.example.com:3022' },
      versionInfo: version,
      syncStatus: 'SYNC_HELLO',
      connectionId: 'c1',
      connectedAt: t0,
    });

    // The same state again renews the lease and announces nothing.
    const lease = await leaseOf(id);
    await new Promise((r) => setTimeout(r, 5));
    expect(await reportPresence(report(id, { syncStatus: 'SYNC_HELLO', replicaId: 'fabric-1' }))).toEqual({
      applied: true,
    });
    expect((await leaseOf(id)).getTime()).toBeGreaterThan(lease.getTime());
    expect(await changes(id)).toHaveLength(1);

    // What a reader sees changed: announced.
    expect(await reportPresence(report(id))).toEqual({ applied: true });
    expect((await changes(id)).map((c) => c.syncStatus)).toEqual(['SYNC_HELLO', 'SYNC_DONE']);
    // Protocols in another order are the same protocols.
    await reportPresence(
      report(id, { supportedProtocols: { wss: 'wss://er.example.com:3023', tls: 'tls://er.example.com:3022' } }),
    );
    await reportPresence(
      report(id, { supportedProtocols: { tls: 'tls://er.example.com:3022', wss: 'wss://er.example.com:3023' } }),
    );
    expect(await changes(id)).toHaveLength(3);

    // A renewal extends the lease and announces nothing.
    const before = await leaseOf(id);
    await new Promise((r) => setTimeout(r, 5));
    expect(await renew([{ routerId: id, connectionId: 'c1' }])).toEqual([]);
    expect((await leaseOf(id)).getTime()).toBeGreaterThan(before.getTime());
    expect(await changes(id)).toHaveLength(3);
  });

  it('a newer connection replaces the presence; a report of an older one (a late disconnect) changes nothing', async () => {
    const id = await newRouter();
    await reportPresence(report(id));
    // The router reconnected through another fabric replica: the same state, so nothing is announced.
    expect(await reportPresence(report(id, { connectionId: 'c2', replicaId: 'fabric-2', connectedAt: t1 }))).toEqual({
      applied: true,
    });
    expect(await current(id)).toMatchObject({ connectionId: 'c2', replicaId: 'fabric-2', isOnline: true });
    expect(await changes(id)).toHaveLength(1);

    // The first replica's disconnect of the old connection arrives late: ignored.
    expect(
      await reportPresence(report(id, { isOnline: false, syncStatus: 'SYNC_DISCONNECTED', hostname: '' })),
    ).toEqual({ applied: false });
    // So is any report of a connection accepted earlier than the recorded one.
    expect(
      await reportPresence(report(id, { connectionId: 'c0', connectedAt: '2025-12-31T23:59:59.000Z', hostname: 'x' })),
    ).toEqual({ applied: false });
    expect(await current(id)).toMatchObject({ connectionId: 'c2', isOnline: true, hostname: 'er.example.com' });
    expect(await changes(id)).toHaveLength(1);

    // The current connection goes: offline, no hostname or protocols, the last version info kept.
    expect(
      await reportPresence(
        report(id, {
          connectionId: 'c2',
          connectedAt: t1,
          isOnline: false,
          hostname: 'still.example.com',
          supportedProtocols: { tls: 'tls://still:1' },
          versionInfo: null,
          syncStatus: 'SYNC_DISCONNECTED',
        }),
      ),
    ).toEqual({ applied: true });
    const last = (await changes(id)).at(-1);
    expect(last).toMatchObject({
      isOnline: false,
      hostname: '',
      supportedProtocols: {},
      versionInfo: version,
      syncStatus: 'SYNC_DISCONNECTED',
      connectionId: 'c2',
    });
    expect(await changes(id)).toHaveLength(2);
    // A late report of the first connection still changes nothing.
    expect(await reportPresence(report(id))).toEqual({ applied: false });
    expect((await current(id))?.isOnline).toBe(false);
  });

  it('a report of an unknown router applies nothing; transit routers have presence too', async () => {
    expect(await reportPresence(report('no-such-router'))).toEqual({ applied: false });
    expect(await current('no-such-router')).toBeUndefined();
    const id = await newRouter('transit');
    expect(await reportPresence(report(id, { hostname: '', supportedProtocols: {} }))).toEqual({ applied: true });
    expect((await changes(id))[0]).toMatchObject({ id, kind: 'transit', isOnline: true });
    // A report whose connectedAt is not a time is refused.
    await expect(reportPresence(report(id, { connectedAt: 'yesterday' }))).rejects.toMatchObject({
      code: 'COULD_NOT_VALIDATE',
    });
  });

  it('renewals extend the current online connections and answer the others as stale', async () => {
    const [live, superseded, lapsed, offline, deleted] = await Promise.all([
      newRouter(),
      newRouter(),
      newRouter('transit'),
      newRouter(),
      newRouter(),
    ]);
    for (const id of [live, superseded, lapsed, offline, deleted]) await reportPresence(report(id));
    await reportPresence(report(superseded, { connectionId: 'c2', connectedAt: t1 }));
    await lapseLease(lapsed);
    await reportPresence(report(offline, { isOnline: false, syncStatus: 'SYNC_DISCONNECTED' }));
    await routers.delete('edge', deleted);
    const before = await leaseOf(live);
    await new Promise((r) => setTimeout(r, 5));

    const stale = await renew([
      { routerId: live, connectionId: 'c1' },
      { routerId: live, connectionId: 'c1' },
      { routerId: superseded, connectionId: 'c1' },
      { routerId: lapsed, connectionId: 'c1' },
      { routerId: offline, connectionId: 'c1' },
      { routerId: deleted, connectionId: 'c1' },
      { routerId: 'never-heard-of', connectionId: 'cx' },
    ]);
    const key = (c: { routerId: string; connectionId: string }) => `${c.routerId}/${c.connectionId}`;
    expect(stale.map(key).sort()).toEqual(
      [superseded, lapsed, offline, deleted, 'never-heard-of']
        .map((r) => `${r}/${r === 'never-heard-of' ? 'cx' : 'c1'}`)
        .sort(),
    );
    expect((await leaseOf(live)).getTime()).toBeGreaterThan(before.getTime());
    // The lapsed one is not revived by a renewal: it stays for the sweeper.
    expect((await leaseOf(lapsed)).getTime()).toBeLessThan(Date.now());
    // The superseding connection renews.
    expect(await renew([{ routerId: superseded, connectionId: 'c2' }])).toEqual([]);
    expect(await renew([])).toEqual([]);
  });

  it('the sweeper turns lapsed presences offline and announces each', async () => {
    const [lapses, holds] = [await newRouter(), await newRouter()];
    await reportPresence(report(lapses));
    await reportPresence(report(holds));
    await lapseLease(lapses);
    const sweeper = new RouterPresenceSweeper(work, { batch: 1 });
    expect(await sweeper.sweep()).toBeGreaterThanOrEqual(1);
    expect(await current(lapses)).toMatchObject({
      isOnline: false,
      hostname: '',
      supportedProtocols: {},
      versionInfo: version,
      syncStatus: 'SYNC_DISCONNECTED',
    });
    expect((await changes(lapses)).at(-1)).toMatchObject({ isOnline: false, syncStatus: 'SYNC_DISCONNECTED' });
    expect(await current(holds)).toMatchObject({ isOnline: true });
    expect(await sweeper.sweep()).toBe(0);
    expect(await changes(lapses)).toHaveLength(2);
    // A lapsed connection is stale for its replica, and a new connection brings the router back.
    expect(await renew([{ routerId: lapses, connectionId: 'c1' }])).toHaveLength(1);
    expect(await reportPresence(report(lapses, { connectionId: 'c2', connectedAt: t1 }))).toEqual({ applied: true });
    expect((await changes(lapses)).at(-1)).toMatchObject({ isOnline: true, connectionId: 'c2' });
  });

  it('router reads show the presence; isOnline filters and sorts', async () => {
    const ops = routerOperations({ routers, presence });
    const tag = uniqueName('p').replace(/[^a-z]/g, '');
    const make = (kind: RouterKind) => routers.create(kind, { name: uniqueName('r'), tags: { t: tag } });
    const [online, never, gone] = [await make('edge'), await make('edge'), await make('edge')];
    const [transitOnline, transitNever] = [await make('transit'), await make('transit')];
    await reportPresence(report(online.id));
    await reportPresence(report(gone.id));
    await reportPresence(report(gone.id, { isOnline: false, syncStatus: 'SYNC_DISCONNECTED' }));
    await reportPresence(report(transitOnline.id));

    const detail = async (key: 'management.detailEdgeRouter' | 'management.detailRouter', id: string) =>
      (bodyOf(await ops[key](request({ params: { id } }) as never)) as { data: Record<string, unknown> }).data;
    expect(await detail('management.detailEdgeRouter', online.id)).toMatchObject({
      isOnline: true,
      hostname: 'er.example.com',
      supportedProtocols: { tls: 'tls://er.example.com:3022' },
      versionInfo: version,
      syncStatus: 'SYNC_DONE',
    });
    expect(await detail('management.detailEdgeRouter', never.id)).toMatchObject({
      isOnline: false,
      hostname: '',
      supportedProtocols: {},
      versionInfo: { os: '', arch: '', version: '', revision: '', buildDate: '' },
      syncStatus: 'SYNC_UNKNOWN',
    });
    // Offline, it shows as never connected (as the reference does), whatever the record kept.
    expect(await current(gone.id)).toMatchObject({ versionInfo: version, syncStatus: 'SYNC_DISCONNECTED' });
    expect(await detail('management.detailEdgeRouter', gone.id)).toMatchObject({
      isOnline: false,
      hostname: '',
      supportedProtocols: {},
      versionInfo: { os: '', arch: '', version: '', revision: '', buildDate: '' },
      syncStatus: 'SYNC_UNKNOWN',
    });
    expect(await detail('management.detailRouter', transitOnline.id)).toMatchObject({ isOnline: true });
    // policy's association lists ask for the same details (`edgeRouterDetails`): in the order asked,
    // edge routers only, unknown ids left out.
    const { details } = (await call(inventoryCallNames.edgeRouterDetails, {
      ids: [gone.id, 'nobody', online.id, transitOnline.id, never.id],
    })) as { details: unknown[] };
    expect(details).toEqual([
      await detail('management.detailEdgeRouter', gone.id),
      await detail('management.detailEdgeRouter', online.id),
      await detail('management.detailEdgeRouter', never.id),
    ]);
    const transitDetail = await ops['management.detailTransitRouter'](
      request({ params: { id: transitNever.id } }) as never,
    );
    expect((bodyOf(transitDetail) as { data: Record<string, unknown> }).data).toMatchObject({ isOnline: false });

    type Listed = { data: { id: string; isOnline: boolean }[]; meta: { filterableFields: string[] } };
    const list = async (
      key: 'management.listEdgeRouters' | 'management.listRouters' | 'management.listTransitRouters',
      filter: string,
      sort = 'sort by id',
    ) =>
      bodyOf(
        await ops[key](request({ query: { filter: `tags.t = "${tag}" and (${filter}) ${sort}` } }) as never),
      ) as Listed;
    const ids = (l: Listed) => l.data.map((r) => r.id);
    const edgeOnline = await list('management.listEdgeRouters', 'isOnline = true');
    expect(ids(edgeOnline)).toEqual([online.id]);
    expect(edgeOnline.data[0]).toMatchObject({ isOnline: true, hostname: 'er.example.com', syncStatus: 'SYNC_DONE' });
    expect(edgeOnline.meta.filterableFields).toEqual(expect.arrayContaining(['isOnline', 'online', 'connected']));
    expect(ids(await list('management.listEdgeRouters', 'isOnline = false')).sort()).toEqual(
      [never.id, gone.id].sort(),
    );
    expect(ids(await list('management.listEdgeRouters', 'online = true or connected = true'))).toEqual([online.id]);
    expect(ids(await list('management.listEdgeRouters', 'true', 'sort by isOnline desc, id')).at(0)).toBe(online.id);
    // The fabric paths list every router, edge routers too (the reference's router manager).
    expect(ids(await list('management.listRouters', 'isOnline = true')).sort()).toEqual(
      [online.id, transitOnline.id].sort(),
    );
    expect(ids(await list('management.listTransitRouters', 'isOnline = false')).sort()).toEqual(
      [never.id, gone.id, transitNever.id].sort(),
    );
    expect((await list('management.listRouters', 'true')).data).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: transitOnline.id, isOnline: true }),
        expect.objectContaining({ id: transitNever.id, isOnline: false }),
      ]),
    );
  });

  it('answers entityStates of router presence: one per router that ever connected, in bytewise id order, by ids too', async () => {
    const entityStates = maintenanceCalls(
      pgMaintenance(
        database,
        new InventoryMaintenance({
          work,
          read,
          schemas: new AjvSchemaValidator(),
          identities: new FakeIdentityDirectory(),
        }),
      ),
    )[maintenanceActions.entityStates]!;
    const states = async (payload: Record<string, unknown>) =>
      entityStatesReplySchema.parse(await entityStates({ type: 'routerPresence', ...payload })).states;
    const connected = await newRouter();
    const never = await newRouter();
    await reportPresence(report(connected, { syncStatus: 'SYNC_IN_PROGRESS' }));

    const all: Record<string, unknown>[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await states({ limit: 2, ...(after === undefined ? {} : { after }) });
      all.push(...page);
      if (page.length < 2) break;
      after = String(page.at(-1)!.id);
    }
    const ids = all.map((s) => String(s.id));
    expect(ids).toEqual([...ids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    expect(ids).toContain(connected);
    expect(ids).not.toContain(never);
    for (const s of all) expect(routerPresenceState.safeParse(s).success).toBe(true);
    const [one] = await states({ ids: [connected, never] });
    expect(one).toEqual((await changes(connected)).at(-1));
  });
});

describe('router presence sweepers racing (postgres)', () => {
  let database: Database;
  let work: UnitOfWork;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ database, work, drop } = await inventoryDatabase('postgres'));
  });
  afterAll(async () => {
    await drop?.();
  });

  it('two sweepers at once announce each lapse once, and leave live presences online', async () => {
    const routers = new RouterService(work);
    const presence = new RouterPresenceService(work);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await routers.create('edge', { name: uniqueName('r') })).id);
    for (const id of ids) await presence.report(report(id));
    const lapsed = ids.slice(0, 30);
    await queryRows(
      database.db,
      `update router_presence set lease_until = now() - interval '1 second' where router_id = any($1::text[])`,
      [lapsed],
    );
    const sweepers = [new RouterPresenceSweeper(work, { batch: 3 }), new RouterPresenceSweeper(work, { batch: 3 })];
    for (let round = 0; round < 3; round++) {
      const counts = await Promise.all(sweepers.map((s) => s.sweep()));
      expect(counts.reduce((a, b) => a + b, 0)).toBe(round === 0 ? 30 : 0);
    }
    const offline = (await outboxEvents(database))
      .filter((e) => e.type === 'routerPresence.changed' && e.payload.isOnline === false)
      .map((e) => String(e.payload.id));
    expect(offline.sort()).toEqual([...lapsed].sort());
    const now = await presence.of(ids);
    for (const id of ids) expect(now.get(id)?.isOnline, id).toBe(!lapsed.includes(id));
  });

  it('start and stop: the loop sweeps until stopped', async () => {
    const routers = new RouterService(work);
    const presence = new RouterPresenceService(work);
    const id = (await routers.create('edge', { name: uniqueName('r') })).id;
    await presence.report(report(id));
    await queryRows(
      database.db,
      `update router_presence set lease_until = now() - interval '1 second' where router_id = $1`,
      [id],
    );
    const errors: unknown[] = [];
    const sweeper = new RouterPresenceSweeper(work, { intervalMs: 20, onError: (e) => errors.push(e) });
    sweeper.start();
    for (let i = 0; i < 100 && (await presence.of([id])).get(id)?.isOnline; i++)
      await new Promise((r) => setTimeout(r, 20));
    await sweeper.stop();
    expect((await presence.of([id])).get(id)?.isOnline).toBe(false);
    expect(errors).toEqual([]);
  });
});
