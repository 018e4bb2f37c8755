import {
  type CreateTerminatorRequest,
  createTerminatorReplySchema,
  dialTargetsReplySchema,
  fabricCallNames,
  inventoryEventTypes,
  removeTerminatorsReplySchema,
  routerTerminatorsReplySchema,
} from '@ziti/contracts';
import { type CallTable, type Database, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../../test/support/infra.ts';
import { storeTargets } from '../../../../test/support/store-contract.ts';
import { inventoryDatabase, outboxEvents } from '../../test/support.ts';
import { AjvSchemaValidator } from '../config-types/ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from '../config-types/config-types.domain.ts';
import { RouterPresenceService } from '../router-presence/router-presence.domain.ts';
import { RouterService } from '../routers/routers.domain.ts';
import { ServiceCatalog } from '../services/services.domain.ts';
import { inventoryCalls } from '../shared/calls.transport.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { TerminatorService, hashIdentitySecret } from './terminators.domain.ts';
import { terminatorOperations } from './terminators.transport.ts';

/**
 * Terminators made and removed by routers for hosting SDKs (`fabric.createTerminator`,
 * `removeTerminators`), what dials read (`dialTargets`, `routerTerminators`), and the events every
 * terminator change announces, management API changes included, on the real Postgres and on PGlite.
 */

const secret = Buffer.from('the instance secret').toString('base64');

describe.each(storeTargets)('terminators from routers on %s', (target) => {
  let database: Database;
  let work: UnitOfWork;
  let drop: () => Promise<void>;
  let routers: RouterService;
  let services: ServiceCatalog;
  let terminators: TerminatorService;
  let presence: RouterPresenceService;
  let calls: CallTable;

  beforeAll(async () => {
    ({ database, work, drop } = await inventoryDatabase(target));
    routers = new RouterService(work);
    services = new ServiceCatalog(work);
    terminators = new TerminatorService(work);
    presence = new RouterPresenceService(work);
    calls = inventoryCalls(
      routers,
      terminators,
      services,
      presence,
      new ConfigTypeService(work, new AjvSchemaValidator()),
    );
  }, 60_000);
  afterAll(async () => {
    await drop?.();
  });

  const newService = async (o: { encryptionRequired?: boolean } = {}) =>
    services.create({ name: uniqueName('s'), terminatorStrategy: 'smartrouting', ...o });
  const newRouter = async () => (await routers.create('edge', { name: uniqueName('er') })).id;
  const create = async (r: CreateTerminatorRequest) =>
    createTerminatorReplySchema.parse(await calls[fabricCallNames.createTerminator]!(r));
  const remove = async (routerId: string, ids: string[]) =>
    removeTerminatorsReplySchema.parse(await calls[fabricCallNames.removeTerminators]!({ routerId, ids })).removed;
  const dialTargets = async (serviceId: string) =>
    dialTargetsReplySchema.parse(await calls[fabricCallNames.dialTargets]!({ serviceId }));
  const bind = (serviceId: string, routerId: string, o: Partial<CreateTerminatorRequest> = {}) => ({
    id: uniqueName('t'),
    serviceId,
    routerId,
    binding: 'edge',
    instanceId: 'instance-1',
    instanceSecret: secret,
    peerData: { '1': Buffer.from('public key').toString('base64') },
    cost: 10,
    precedence: 'default' as const,
    hostId: 'identity-1',
    ...o,
  });
  /** The `terminator.*` events of a terminator, oldest first, each checked against its schema. */
  const eventsOf = async (id: string) =>
    (await outboxEvents(database))
      .filter((e) => e.type.startsWith('terminator.') && e.payload.id === id)
      .map((e) => {
        const def = Object.values(inventoryEventTypes).find((d) => d.type === e.type)!;
        expect(def.schema.safeParse(e.payload).success, JSON.stringify(e.payload)).toBe(true);
        return { type: e.type, payload: e.payload };
      });

  it('createTerminator: created, then kept (cost and precedence updated), or a conflict naming what differs', async () => {
    const service = await newService();
    const other = await newService();
    const router = await newRouter();
    const otherRouter = await newRouter();
    const req = bind(service.id, router);

    expect(await create(bind('no-such-service', router))).toEqual({ outcome: 'unknownService' });
    expect(await create(req)).toEqual({ outcome: 'created', terminatorId: req.id });
    expect(await terminators.get(req.id)).toMatchObject({
      id: req.id,
      serviceId: service.id,
      routerId: router,
      binding: 'edge',
      address: req.id,
      instanceId: 'instance-1',
      instanceSecretHash: hashIdentitySecret(secret),
      cost: 10,
      precedence: 'default',
      hostId: 'identity-1',
    });
    const [stored] = await queryRows<{ peer_data: unknown }>(
      database.db,
      'select peer_data from terminators where id = $1',
      [req.id],
    );
    expect(typeof stored!.peer_data === 'string' ? JSON.parse(stored!.peer_data) : stored!.peer_data).toEqual(
      req.peerData,
    );
    const [created] = await eventsOf(req.id);
    expect(created).toMatchObject({
      type: 'terminator.created',
      payload: { id: req.id, serviceId: service.id, routerId: router, instanceId: 'instance-1', hostId: 'identity-1' },
    });
    // Never the secret or its hash, nor the peer data.
    expect(Object.keys(created!.payload).sort()).toEqual(
      [
        'address',
        'binding',
        'cost',
        'createdAt',
        'hostId',
        'id',
        'instanceId',
        'precedence',
        'routerId',
        'serviceId',
        'tags',
        'updatedAt',
      ].sort(),
    );

    // The management API shows it, its instance as `identity`.
    const ops = terminatorOperations({ terminators });
    const detail = await ops['management.detailTerminator']({ params: { id: req.id } } as never);
    expect((detail as { body: { data: Record<string, unknown> } }).body.data).toMatchObject({
      id: req.id,
      identity: 'instance-1',
      binding: 'edge',
      address: req.id,
      cost: 10,
      // No router edge: no dial touched it.
      dynamicCost: 0,
      precedence: 'default',
      routerId: router,
      serviceId: service.id,
    });

    // The same again: kept, nothing announced.
    expect(await create(req)).toEqual({ outcome: 'exists', terminatorId: req.id });
    expect(await eventsOf(req.id)).toHaveLength(1);
    // Another cost or precedence: kept and updated (other fields as they were).
    expect(await create({ ...req, cost: 20, precedence: 'required', instanceId: 'ignored' })).toEqual({
      outcome: 'exists',
      terminatorId: req.id,
    });
    expect(await terminators.get(req.id)).toMatchObject({ cost: 20, precedence: 'required', instanceId: 'instance-1' });
    expect((await eventsOf(req.id)).map((e) => e.type)).toEqual(['terminator.created', 'terminator.updated']);

    // Another binding, service, router or host: a conflict that names it, and nothing changes.
    const conflict = async (o: Partial<CreateTerminatorRequest>) => {
      const reply = await create({ ...req, ...o });
      return reply.outcome === 'conflict' ? reply.reason : reply.outcome;
    };
    expect(await conflict({ binding: 'transport' })).toBe(
      'selected id conflicts with terminator for different binding',
    );
    expect(await conflict({ serviceId: other.id })).toBe('selected id conflicts with terminator for different service');
    expect(await conflict({ routerId: otherRouter })).toBe(
      'selected id conflicts with terminator for different router',
    );
    expect(await conflict({ hostId: 'identity-2' })).toBe(
      'selected id conflicts with terminator for different identity',
    );
    expect(await eventsOf(req.id)).toHaveLength(2);
    expect(await terminators.get(req.id)).toMatchObject({ serviceId: service.id, routerId: router, cost: 20 });

    // A terminator without an instance secret keeps no hash.
    const plain = bind(service.id, router, { instanceId: '', instanceSecret: '', peerData: {} });
    expect(await create(plain)).toMatchObject({ outcome: 'created' });
    expect(await terminators.get(plain.id)).toMatchObject({ instanceId: '', instanceSecretHash: null });
    // A router that is not there is refused.
    await expect(create(bind(service.id, 'no-such-router'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it("the management reads show the router edge's dynamic cost (not the static one), asked once per page or detail", async () => {
    const service = await newService();
    const router = await newRouter();
    const [a, b] = [bind(service.id, router, { cost: 10 }), bind(service.id, router, { cost: 30 })];
    await create(a);
    await create(b);
    const asked: string[][] = [];
    const withCosts = new TerminatorService(work, undefined, work, {
      of: async (ids) => {
        asked.push([...ids].sort());
        return new Map(ids.map((id) => [id, id === a.id ? 22 : 0]));
      },
    });
    const ops = terminatorOperations({ terminators: withCosts });
    type Listed = { body: { data: { id: string; cost: number; dynamicCost: number }[] } };
    const listed = (await ops['management.listServiceTerminators']({
      params: { id: service.id },
      query: {},
    } as never)) as Listed;
    expect(listed.body.data.map((t) => [t.id, t.cost, t.dynamicCost]).sort()).toEqual(
      [
        [a.id, 10, 22],
        [b.id, 30, 0],
      ].sort(),
    );
    const all = (await ops['management.listTerminators']({
      query: { filter: `service = "${service.id}"` },
    } as never)) as Listed;
    expect(all.body.data.map((t) => t.dynamicCost).sort()).toEqual([0, 22]);
    const detail = (await ops['management.detailTerminator']({ params: { id: b.id } } as never)) as {
      body: { data: { dynamicCost: number } };
    };
    expect(detail.body.data.dynamicCost).toBe(0);
    expect(asked).toEqual([[a.id, b.id].sort(), [a.id, b.id].sort(), [b.id]]);
  });

  it('createTerminator: creates of the same id at once all succeed, one of them creating it', async () => {
    const service = await newService();
    const router = await newRouter();
    const reqs = Array.from({ length: 8 }, () => bind(service.id, router));
    const replies = await Promise.all(reqs.flatMap((r) => [create(r), create(r), create({ ...r, cost: 11 })]));
    for (const [i, r] of reqs.entries()) {
      const outcomes = replies.slice(i * 3, i * 3 + 3).map((x) => x.outcome);
      expect(outcomes.sort()).toEqual(['created', 'exists', 'exists']);
      const types = (await eventsOf(r.id)).map((e) => e.type);
      expect(types.filter((t) => t === 'terminator.created')).toHaveLength(1);
      expect((await terminators.get(r.id)).serviceId).toBe(service.id);
    }
  });

  it('removeTerminators removes only those of the router that asks, and announces each', async () => {
    const service = await newService();
    const [a, b] = [await newRouter(), await newRouter()];
    const [a1, a2, b1] = [bind(service.id, a), bind(service.id, a), bind(service.id, b)];
    for (const r of [a1, a2, b1]) await create(r);
    expect((await remove(a, [a1.id, b1.id, 'no-such-terminator', a1.id])).sort()).toEqual([a1.id]);
    await expect(terminators.get(a1.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await terminators.get(a2.id)).routerId).toBe(a);
    expect((await terminators.get(b1.id)).routerId).toBe(b);
    expect((await eventsOf(a1.id)).map((e) => e.type)).toEqual(['terminator.created', 'terminator.deleted']);
    expect((await eventsOf(b1.id)).map((e) => e.type)).toEqual(['terminator.created']);
    expect(await remove(a, [])).toEqual([]);
    expect(await remove(b, [b1.id])).toEqual([b1.id]);
  });

  it('dialTargets: the service and all its terminators, whether their routers are online; routerTerminators', async () => {
    expect(await dialTargets('no-such-service')).toEqual({ service: null, terminators: [] });
    const service = await newService({ encryptionRequired: false });
    expect(await dialTargets(service.id)).toEqual({
      service: { id: service.id, name: service.name, terminatorStrategy: 'smartrouting', encryptionRequired: false },
      terminators: [],
    });
    const [online, offline] = [await newRouter(), await newRouter()];
    await presence.report({
      routerId: online,
      connectionId: 'c1',
      replicaId: 'fabric-1',
      connectedAt: new Date().toISOString(),
      isOnline: true,
      hostname: 'h',
      supportedProtocols: { tls: 'tls://h:3022' },
      versionInfo: null,
      syncStatus: 'SYNC_DONE',
      leaseMs: 30_000,
    });
    const t1 = bind(service.id, online, { id: `a-${uniqueName('t')}`, precedence: 'required', cost: 3 });
    const t2 = bind(service.id, offline, { id: `b-${uniqueName('t')}`, peerData: {} });
    await create(t2);
    await create(t1);
    // A terminator made through the management API is a dial target too.
    const managed = await terminators.create({
      service: service.id,
      router: online,
      binding: 'transport',
      address: 'tcp:10.0.0.1:80',
    });
    const other = await newService();
    await create(bind(other.id, online));

    const targets = await dialTargets(service.id);
    expect(targets.service).toMatchObject({ id: service.id, encryptionRequired: false });
    const byId = new Map(targets.terminators.map((t) => [t.id, t]));
    expect([...byId.keys()].sort()).toEqual([t1.id, t2.id, managed.id].sort());
    expect(byId.get(t1.id)).toEqual({
      id: t1.id,
      routerId: online,
      binding: 'edge',
      address: t1.id,
      instanceId: 'instance-1',
      cost: 3,
      precedence: 'required',
      peerData: t1.peerData,
      hostId: 'identity-1',
      routerOnline: true,
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(byId.get(t2.id)).toMatchObject({ routerId: offline, routerOnline: false, peerData: {} });
    expect(byId.get(managed.id)).toMatchObject({
      binding: 'transport',
      address: 'tcp:10.0.0.1:80',
      instanceId: '',
      hostId: '',
      peerData: {},
      routerOnline: true,
    });

    const ofRouter = routerTerminatorsReplySchema.parse(
      await calls[fabricCallNames.routerTerminators]!({ routerId: offline }),
    ).terminators;
    expect(ofRouter.map((t) => t.id)).toEqual([t2.id]);
    expect(ofRouter[0]).toMatchObject({ routerOnline: false, hostId: 'identity-1' });
  });

  it('every change of a terminator is announced: management API changes, and those that go with their router or service', async () => {
    const service = await newService();
    const router = await newRouter();
    const made = await terminators.create({ service: service.id, router, binding: 'transport', address: 'tcp:a:1' });
    await terminators.update(made.id, { cost: 7 }, 'patch');
    await terminators.update(
      made.id,
      { service: service.id, router, binding: 'transport', address: 'tcp:b:1' },
      'replace',
    );
    await terminators.delete(made.id);
    const events = await eventsOf(made.id);
    expect(events.map((e) => e.type)).toEqual([
      'terminator.created',
      'terminator.updated',
      'terminator.updated',
      'terminator.deleted',
    ]);
    expect(events[1]!.payload).toMatchObject({ cost: 7, address: 'tcp:a:1' });
    expect(events[2]!.payload).toMatchObject({ cost: 0, address: 'tcp:b:1' });

    // A deleted router and a deleted service take their terminators with them, each announced.
    const other = await newService();
    const byRouter = await terminators.create({ service: other.id, router, binding: 'transport', address: 'x' });
    const fromRouter = bind(other.id, router);
    await create(fromRouter);
    const otherRouter = await newRouter();
    const byService = await terminators.create({
      service: service.id,
      router: otherRouter,
      binding: 'transport',
      address: 'y',
    });
    await routers.delete('edge', router);
    for (const id of [byRouter.id, fromRouter.id])
      expect((await eventsOf(id)).map((e) => e.type)).toEqual(['terminator.created', 'terminator.deleted']);
    await services.delete(service.id);
    expect((await eventsOf(byService.id)).map((e) => e.type)).toEqual(['terminator.created', 'terminator.deleted']);
    await expect(terminators.get(byService.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
