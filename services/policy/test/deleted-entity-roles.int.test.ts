import { eventTypes, inventoryEventTypes } from '@ziti/contracts';
import { type Database, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgAccessLinks } from '../src/access/access-links.store.ts';
import type { Policy } from '../src/policies/policies.domain.ts';
import { identityFixture, policyBed, policyTestDatabase, routerFixture, serviceFixture } from './support.ts';

/**
 * Deleting an identity, a service, an edge router or a posture check removes its `@id` from every
 * policy's roles of its type, as the reference's delete does (ziti `controller/db/base_store.go`
 * `deleteEntityReferences`): `updatedAt` is kept, the display no longer shows the id, each policy
 * changed is announced with its `…Policy.updated` event and relinked like any policy change, and
 * the rewrite happens in the consumer's transaction of the owner's `<entity>.deleted` event, once
 * (a redelivery or an older event changes nothing). Real Postgres, the consumers' handlers.
 */
let database: Database;
let drop: () => Promise<void>;
let bed: ReturnType<typeof policyBed>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('pdel', 6));
  bed = policyBed(database);
});
afterAll(async () => {
  await drop?.();
});

/** The events policy wrote after `position` of its outbox (type and payload), in order. */
async function outboxAfter(position: number): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  return queryRows(database.db, 'select type, payload from outbox where position > $1 order by position', [position]);
}
const outboxPosition = async () =>
  Number(
    (await queryRows<{ last: string }>(database.db, 'select coalesce(max(position), 0) as last from outbox'))[0]!.last,
  );

/** A network with one of each entity kind, and one policy of each kind naming all of them by `@id`. */
async function network(tag: string) {
  const ids = {
    identity: `${tag}-i1`,
    other: `${tag}-i2`,
    service: `${tag}-s1`,
    router: `${tag}-r1`,
  };
  await bed.deliver(eventTypes.identityCreated, 'auth', identityFixture(ids.identity, ['eng']));
  await bed.deliver(eventTypes.identityCreated, 'auth', identityFixture(ids.other, []));
  await bed.deliver(inventoryEventTypes.serviceCreated, 'inventory', serviceFixture(ids.service, ['web']));
  await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', routerFixture(ids.router, ['edge']));
  const { policies, postureChecks } = bed.engine;
  const check = await postureChecks.create({ name: `${tag}-mac`, typeId: 'MAC', macAddresses: ['aa:bb:cc:dd:ee:ff'] });
  const sp = await policies.service.create({
    name: `${tag}-sp`,
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`@${ids.identity}`, `@${ids.other}`, '#eng'],
    serviceRoles: [`@${ids.service}`],
    postureCheckRoles: [`@${check.id}`],
  });
  const erp = await policies.edgeRouter.create({
    name: `${tag}-erp`,
    semantic: 'AnyOf',
    identityRoles: [`@${ids.identity}`],
    edgeRouterRoles: [`@${ids.router}`, '#edge'],
  });
  const serp = await policies.serviceEdgeRouter.create({
    name: `${tag}-serp`,
    semantic: 'AnyOf',
    serviceRoles: [`@${ids.service}`],
    edgeRouterRoles: [`@${ids.router}`],
  });
  return { ids, checkId: check.id, sp, erp, serp };
}

const roles = (p: Policy) => p.roles;
const noDifferences = async () => expect(await new PgAccessLinks(database.db).differences()).toEqual([]);

describe('an entity deleted by its owner leaves every policy role list', () => {
  it('identity.deleted: @id leaves service and edge-router policies (updatedAt kept), announced and relinked, once', async () => {
    const { ids, sp, erp, serp } = await network('del-id');
    const { policies } = bed.engine;
    const before = await outboxPosition();
    const at = await bed.deliver(eventTypes.identityDeleted, 'auth', identityFixture(ids.identity, ['eng']));

    const spNow = await policies.service.get(sp.id);
    const erpNow = await policies.edgeRouter.get(erp.id);
    expect(roles(spNow).identityRoles).toEqual(['#eng', `@${ids.other}`]);
    expect(roles(erpNow).identityRoles).toEqual([]);
    expect(roles(erpNow).edgeRouterRoles).toEqual(['#edge', `@${ids.router}`]);
    // As the reference: the rewrite does not touch updatedAt.
    expect(spNow.updatedAt).toEqual(sp.updatedAt);
    expect(erpNow.updatedAt).toEqual(erp.updatedAt);
    expect(await policies.serviceEdgeRouter.get(serp.id)).toEqual(serp);

    const names = await policies.service.roleNames([spNow]);
    expect([...(names.get('identities')?.keys() ?? [])]).toEqual([ids.other]);

    const written = await outboxAfter(before);
    const updated = written.filter((e) => e.type.endsWith('Policy.updated'));
    expect(updated.map((e) => [e.type, e.payload.id, e.payload.identityRoles])).toEqual([
      ['servicePolicy.updated', sp.id, ['#eng', `@${ids.other}`]],
      ['edgeRouterPolicy.updated', erp.id, []],
    ]);
    expect(updated[0]!.payload.updatedAt).toBe(sp.updatedAt.toISOString());
    // The identity lost its service through the policy, once.
    expect(written.filter((e) => e.type === 'identityAccess.changed').map((e) => e.payload.identityId)).toEqual([
      ids.identity,
    ]);
    await noDifferences();

    // Redelivered (same position) or an older state arriving late: nothing more.
    const again = await outboxPosition();
    await bed.deliver(eventTypes.identityDeleted, 'auth', identityFixture(ids.identity, ['eng']), at);
    await bed.deliver(eventTypes.identityUpdated, 'auth', identityFixture(ids.identity, ['eng']), at - 1);
    expect(await outboxAfter(again)).toEqual([]);
    expect(await policies.service.get(sp.id)).toEqual(spNow);
    expect(await policies.edgeRouter.get(erp.id)).toEqual(erpNow);
  });

  it('service.deleted: @id leaves service and service-edge-router policies', async () => {
    const { ids, sp, erp, serp } = await network('del-svc');
    const { policies } = bed.engine;
    const before = await outboxPosition();
    const at = await bed.deliver(inventoryEventTypes.serviceDeleted, 'inventory', serviceFixture(ids.service, ['web']));
    expect(roles(await policies.service.get(sp.id)).serviceRoles).toEqual([]);
    expect(roles(await policies.serviceEdgeRouter.get(serp.id))).toEqual({
      serviceRoles: [],
      edgeRouterRoles: [`@${ids.router}`],
    });
    expect(await policies.edgeRouter.get(erp.id)).toEqual(erp);
    expect((await policies.serviceEdgeRouter.get(serp.id)).updatedAt).toEqual(serp.updatedAt);
    const updated = (await outboxAfter(before)).filter((e) => e.type.endsWith('Policy.updated'));
    expect(updated.map((e) => [e.type, e.payload.id, e.payload.serviceRoles])).toEqual([
      ['servicePolicy.updated', sp.id, []],
      ['serviceEdgeRouterPolicy.updated', serp.id, []],
    ]);
    await noDifferences();

    const again = await outboxPosition();
    await bed.deliver(inventoryEventTypes.serviceDeleted, 'inventory', serviceFixture(ids.service, ['web']), at);
    expect(await outboxAfter(again)).toEqual([]);
  });

  it('edgeRouter.deleted: @id leaves edge-router and service-edge-router policies', async () => {
    const { ids, sp, erp, serp } = await network('del-er');
    const { policies } = bed.engine;
    const before = await outboxPosition();
    const at = await bed.deliver(
      inventoryEventTypes.edgeRouterDeleted,
      'inventory',
      routerFixture(ids.router, ['edge']),
    );
    expect(roles(await policies.edgeRouter.get(erp.id))).toEqual({
      identityRoles: [`@${ids.identity}`],
      edgeRouterRoles: ['#edge'],
    });
    expect(roles(await policies.serviceEdgeRouter.get(serp.id)).edgeRouterRoles).toEqual([]);
    expect(await policies.service.get(sp.id)).toEqual(sp);
    const updated = (await outboxAfter(before)).filter((e) => e.type.endsWith('Policy.updated'));
    expect(updated.map((e) => [e.type, e.payload.id, e.payload.edgeRouterRoles])).toEqual([
      ['edgeRouterPolicy.updated', erp.id, ['#edge']],
      ['serviceEdgeRouterPolicy.updated', serp.id, []],
    ]);
    await noDifferences();

    const again = await outboxPosition();
    await bed.deliver(inventoryEventTypes.edgeRouterDeleted, 'inventory', routerFixture(ids.router, ['edge']), at);
    expect(await outboxAfter(again)).toEqual([]);
  });

  it('a posture check deleted leaves postureCheckRoles the same way (updatedAt kept, announced, relinked)', async () => {
    const { checkId, sp } = await network('del-pc');
    const { policies, postureChecks } = bed.engine;
    const before = await outboxPosition();
    await postureChecks.delete(checkId);
    const now = await policies.service.get(sp.id);
    expect(roles(now).postureCheckRoles).toEqual([]);
    expect(now.updatedAt).toEqual(sp.updatedAt);
    const written = await outboxAfter(before);
    expect(written.map((e) => e.type)).toEqual(['servicePolicy.updated', 'postureCheck.deleted']);
    expect(written[0]!.payload).toMatchObject({ id: sp.id, postureCheckRoles: [] });
    await noDifferences();
  });

  it('a read model rebuilt from its owner drops the @ids of entities it no longer has (a deletion missed in a gap)', async () => {
    const { ids, sp, erp } = await network('del-gap');
    const { policies } = bed.engine;
    // The owner no longer has the identity; its deletion event was lost: the rebuild tombstones it.
    await bed.engine.identities(database.db).tombstone(ids.identity, bed.nextPosition());
    const auth = bed.subscriptions.find((s) => s.source === 'auth')!;
    const identities = auth.readModels!.find((m) => m.entity === 'identity')!;
    const before = await outboxPosition();
    const { inEventTransaction } = await import('@ziti/platform');
    await inEventTransaction(database, 'policy', undefined, (tx, events) => identities.rebuilt!(tx, events));
    expect(roles(await policies.service.get(sp.id)).identityRoles).toEqual(['#eng', `@${ids.other}`]);
    expect(roles(await policies.edgeRouter.get(erp.id)).identityRoles).toEqual([]);
    const updated = (await outboxAfter(before)).filter((e) => e.type.endsWith('Policy.updated'));
    expect(updated.map((e) => [e.type, e.payload.id])).toEqual([
      ['servicePolicy.updated', sp.id],
      ['edgeRouterPolicy.updated', erp.id],
    ]);
    await noDifferences();
  });
});
