import { type IdentityState, eventTypes, inventoryEventTypes } from '@ziti/contracts';
import { type Database, inEventTransaction, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFixture, policyBed, policyTestDatabase, routerFixture } from '../../test/support.ts';
import { PgAccessLinks } from '../access/access-links.store.ts';

/**
 * The system edge-router policy of a tunneler-enabled edge router (ziti
 * `controller/db/edge_router_store.go`, `routerIdentityConstraint`): `edge-router-<id>-system`, its id
 * the router's, `isSystem`, AnyOf, identityRoles `@<id>` (the router's Router identity, which auth
 * makes from the same events) and edgeRouterRoles `@<id>`. It comes with the router (or with its
 * tunneling), leaves with its tunneling or the router, never changes on a rename, and is refused to
 * PATCH, PUT and DELETE. policy keeps it from inventory's `edgeRouter.*` events, in the consumer's
 * transaction, by position: a redelivery or an older state changes nothing. Real Postgres.
 */
let database: Database;
let drop: () => Promise<void>;
let bed: ReturnType<typeof policyBed>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('psys', 6));
  bed = policyBed(database);
});
afterAll(async () => {
  await drop?.();
});

const outboxPosition = async () =>
  Number(
    (await queryRows<{ last: string }>(database.db, 'select coalesce(max(position), 0) as last from outbox'))[0]!.last,
  );
async function policyEventsAfter(position: number) {
  const rows = await queryRows<{ type: string; payload: Record<string, unknown> }>(
    database.db,
    `select type, payload from outbox where position > $1 and type like '%Policy.%' order by position`,
    [position],
  );
  return rows.map((r) => [r.type, r.payload.id]);
}
const tunneler = (id: string, over: Partial<ReturnType<typeof routerFixture>> = {}) => ({
  ...routerFixture(id, ['edge']),
  isTunnelerEnabled: true,
  updatedAt: '2026-02-03T04:05:06.789Z',
  ...over,
});
/** The Router identity auth makes of a tunneler-enabled router. */
const routerIdentity = (id: string): IdentityState => ({ ...identityFixture(id, []), typeId: 'Router' });
const systemPolicy = (id: string) => bed.engine.policies.edgeRouter.get(id);
const systemPolicyRows = (id: string) =>
  queryRows(database.db, 'select id from edge_router_policies where id = $1', [id]);
const links = async (id: string) => ({
  identities: (
    await queryRows<{ identity_id: string }>(
      database.db,
      'select identity_id from edge_router_policy_identities where policy_id = $1',
      [id],
    )
  ).map((r) => r.identity_id),
  edgeRouters: (
    await queryRows<{ edge_router_id: string }>(
      database.db,
      'select edge_router_id from edge_router_policy_edge_routers where policy_id = $1',
      [id],
    )
  ).map((r) => r.edge_router_id),
});
const noDifferences = async () => expect(await new PgAccessLinks(database.db).differences()).toEqual([]);

describe('the system edge-router policy of a tunneler-enabled edge router', () => {
  it('comes with the router, links it and its Router identity, and is announced once', async () => {
    const id = 'sys-r1';
    const before = await outboxPosition();
    const at = await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id));
    expect(await systemPolicy(id)).toEqual({
      id,
      name: `edge-router-${id}-system`,
      semantic: 'AnyOf',
      type: null,
      isSystem: true,
      roles: { identityRoles: [`@${id}`], edgeRouterRoles: [`@${id}`] },
      tags: {},
      createdAt: new Date('2026-02-03T04:05:06.789Z'),
      updatedAt: new Date('2026-02-03T04:05:06.789Z'),
    });
    expect(await policyEventsAfter(before)).toEqual([['edgeRouterPolicy.created', id]]);
    // The identity comes from auth, in any order: linked when it arrives.
    expect(await links(id)).toEqual({ identities: [], edgeRouters: [id] });
    await bed.deliver(eventTypes.identityCreated, 'auth', routerIdentity(id));
    expect(await links(id)).toEqual({ identities: [id], edgeRouters: [id] });
    expect(
      await queryRows(database.db, 'select edge_router_id from identity_edge_routers where identity_id = $1', [id]),
    ).toEqual([{ edge_router_id: id }]);
    await noDifferences();

    // Redelivered: nothing more.
    const again = await outboxPosition();
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id), at);
    expect(await policyEventsAfter(again)).toEqual([]);

    // A rename changes neither its name nor its roles (the reference's neither).
    await bed.deliver(inventoryEventTypes.edgeRouterUpdated, 'inventory', tunneler(id, { name: 'renamed' }));
    expect((await systemPolicy(id)).name).toBe(`edge-router-${id}-system`);
    expect(await policyEventsAfter(again)).toEqual([]);
  });

  it('is refused to PATCH, PUT and DELETE with the reference codes and causes', async () => {
    const id = 'sys-r2';
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id));
    const service = bed.engine.policies.edgeRouter;
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'accepted',
        (e: unknown) => JSON.parse(JSON.stringify(e)),
      );
    const updateRefused = {
      code: 'ENTITY_CAN_NOT_BE_UPDATED',
      message: 'The entity requested for update can not be updated',
      cause: { code: 'UNHANDLED', message: `cannot update system edgeRouterPolicy in a non-system context (id=${id})` },
    };
    expect(await refusal(service.update(id, { name: 'x' }, 'patch'))).toEqual(updateRefused);
    // The system check comes before the roles are validated, as in the reference.
    expect(await refusal(service.update(id, { identityRoles: ['@nope'] }, 'patch'))).toEqual(updateRefused);
    expect(await refusal(service.update(id, { name: 'x', semantic: 'AnyOf' }, 'replace'))).toEqual(updateRefused);
    expect(await refusal(service.delete(id))).toEqual({
      code: 'ENTITY_CAN_NOT_BE_DELETED',
      message: 'The entity requested for delete can not be deleted',
      cause: { code: 'UNHANDLED', message: `cannot delete system edgeRouterPolicy in a non-system context (id=${id})` },
    });
    expect((await systemPolicy(id)).isSystem).toBe(true);
    // Its name is taken while it exists.
    expect(await refusal(service.create({ name: `edge-router-${id}-system`, semantic: 'AnyOf' }))).toMatchObject({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'name' },
    });
    // Listed with the others, and by `isSystem = true`.
    const listed = await service.list({ filter: 'isSystem = true' });
    expect(listed.items.map((p) => p.id)).toContain(id);
    expect((await service.list({ filter: 'isSystem = false' })).items.map((p) => p.id)).not.toContain(id);
  });

  it('leaves with the tunneling and comes back with it; an older state arriving late changes nothing', async () => {
    const id = 'sys-r3';
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id));
    await bed.deliver(eventTypes.identityCreated, 'auth', routerIdentity(id));
    const before = await outboxPosition();
    const off = await bed.deliver(
      inventoryEventTypes.edgeRouterUpdated,
      'inventory',
      tunneler(id, { isTunnelerEnabled: false, updatedAt: '2026-02-04T00:00:00.000Z' }),
    );
    expect(await systemPolicyRows(id)).toEqual([]);
    expect(await links(id)).toEqual({ identities: [], edgeRouters: [] });
    expect(await policyEventsAfter(before)).toEqual([['edgeRouterPolicy.deleted', id]]);
    // An older, still-enabled state delivered late (a redelivery of the creation): stays gone.
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id), off - 2);
    expect(await systemPolicyRows(id)).toEqual([]);

    const on = await bed.deliver(
      inventoryEventTypes.edgeRouterUpdated,
      'inventory',
      tunneler(id, { updatedAt: '2026-02-05T00:00:00.000Z' }),
    );
    expect(await systemPolicy(id)).toMatchObject({
      isSystem: true,
      createdAt: new Date('2026-02-05T00:00:00.000Z'),
      roles: { identityRoles: [`@${id}`], edgeRouterRoles: [`@${id}`] },
    });
    expect(await links(id)).toEqual({ identities: [id], edgeRouters: [id] });
    // The disabling state redelivered at its own position: older than the enabling one, nothing.
    await bed.deliver(
      inventoryEventTypes.edgeRouterUpdated,
      'inventory',
      tunneler(id, { isTunnelerEnabled: false }),
      off,
    );
    expect((await systemPolicy(id)).isSystem).toBe(true);
    expect(on).toBeGreaterThan(off);
    await noDifferences();
  });

  it('leaves with the router; the Router identity deleted first never strips it, a user policy naming them loses both', async () => {
    const id = 'sys-r4';
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(id));
    await bed.deliver(eventTypes.identityCreated, 'auth', routerIdentity(id));
    const user = await bed.engine.policies.edgeRouter.create({
      name: 'names-the-router',
      semantic: 'AnyOf',
      identityRoles: [`@${id}`],
      edgeRouterRoles: [`@${id}`],
    });
    // auth's deletion of the identity arrives before inventory's deletion of the router.
    await bed.deliver(eventTypes.identityDeleted, 'auth', routerIdentity(id));
    expect((await systemPolicy(id)).roles).toEqual({ identityRoles: [`@${id}`], edgeRouterRoles: [`@${id}`] });
    expect((await bed.engine.policies.edgeRouter.get(user.id)).roles.identityRoles).toEqual([]);
    const before = await outboxPosition();
    await bed.deliver(inventoryEventTypes.edgeRouterDeleted, 'inventory', tunneler(id));
    expect(await systemPolicyRows(id)).toEqual([]);
    expect((await bed.engine.policies.edgeRouter.get(user.id)).roles).toEqual({
      identityRoles: [],
      edgeRouterRoles: [],
    });
    expect(await policyEventsAfter(before)).toEqual([
      ['edgeRouterPolicy.deleted', id],
      ['edgeRouterPolicy.updated', user.id],
    ]);
    await noDifferences();
  });

  it('a router without tunneling has none; a rebuild of the routers brings every system policy in line', async () => {
    const plain = 'sys-r5';
    const enabled = 'sys-r6';
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', routerFixture(plain, []));
    expect(await systemPolicyRows(plain)).toEqual([]);
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', tunneler(enabled));
    // Drift as a lost event would leave it: a stray system policy for the plain router, none for the enabled one.
    await queryRows(database.db, 'delete from edge_router_policies where id = $1', [enabled]);
    await queryRows(
      database.db,
      `insert into edge_router_policies (id, name, semantic, identity_roles, edge_router_roles, is_system, created_at, updated_at)
       values ($1, $2, 'AnyOf', '{}', '{}', true, now(), now())`,
      [plain, `edge-router-${plain}-system`],
    );
    const inventory = bed.subscriptions.find((s) => s.source === 'inventory')!;
    const routers = inventory.readModels!.find((m) => m.entity === 'edgeRouter')!;
    const before = await outboxPosition();
    await inEventTransaction(database, 'policy', undefined, (tx, events) => routers.rebuilt!(tx, events));
    expect(await systemPolicyRows(plain)).toEqual([]);
    expect((await systemPolicy(enabled)).isSystem).toBe(true);
    expect(await policyEventsAfter(before)).toEqual([
      ['edgeRouterPolicy.deleted', plain],
      ['edgeRouterPolicy.created', enabled],
    ]);
    await noDifferences();
  });
});
