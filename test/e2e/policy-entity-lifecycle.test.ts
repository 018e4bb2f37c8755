import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Policies follow the entities they name, as the reference's do (checked against ziti v1.1.9):
 * deleting an identity, a service, an edge router or a posture check takes its `@id` out of every
 * policy's roles and their display, keeping `updatedAt`; a tunneler-enabled edge router has a
 * system edge-router policy `edge-router-<id>-system` (its id the router's, `isSystem`, AnyOf,
 * `@<id>` identity and router), listed like any other and by `isSystem = true`, refused to PATCH,
 * PUT and DELETE with the reference's codes and causes, gone with the tunneling or the router.
 */
let e: E2e;

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });

async function create(path: string, body: unknown): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  expect(res.status, `${path} ${res.text}`).toBe(201);
  return res.json.data.id as string;
}
async function remove(path: string): Promise<void> {
  const res = await admin({ method: 'DELETE', path });
  expect(res.status, `${path} ${res.text}`).toBe(200);
}
const detail = async (path: string) => {
  const res = await admin({ path });
  expect(res.status, `${path} ${res.text}`).toBe(200);
  return res.json.data;
};
const list = async (path: string, filter: string) => {
  const res = await admin({ path: `${path}?filter=${encodeURIComponent(filter)}` });
  expect(res.status, res.text).toBe(200);
  return (res.json.data as { id: string }[]).map((p) => p.id);
};
const display = (roles: string[]) => roles.map((r) => ({ role: r, name: r }));

interface AuditRecord {
  operation: string;
  requestId: string;
  actorId?: string;
  entityType: string;
  entityId: string;
  action: string;
  changes?: Record<string, { before: unknown; after: unknown }>;
}
/** The one audit record a filter selects, once the trail has it (it follows the owners' events). */
const theRecord = (filter: string) =>
  waitFor(async () => {
    const res = await admin({ path: `/extensions/audit-records?filter=${encodeURIComponent(filter)}` });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.length).toBeLessThanOrEqual(1);
    return res.json.data[0] as AuditRecord | undefined;
  }, `the audit record of ${filter}`);

describe('deleting an entity takes its @id out of every policy', () => {
  it('identities, services, edge routers and posture checks: roles and their display, updatedAt kept', async () => {
    const keptName = uniqueName('kept');
    const identity = await e.createIdentity();
    const kept = await e.createIdentity({ name: keptName });
    const service = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const router = await create('/edge-routers', { name: uniqueName('er') });
    const check = await create('/posture-checks', {
      name: uniqueName('mac'),
      typeId: 'MAC',
      macAddresses: ['aa:bb:cc:dd:ee:ff'],
    });
    const sp = await create('/service-policies', {
      name: uniqueName('sp'),
      type: 'Dial',
      semantic: 'AllOf',
      identityRoles: [`@${identity}`, `@${kept}`, '#a'],
      serviceRoles: [`@${service}`],
      postureCheckRoles: [`@${check}`],
    });
    const erp = await create('/edge-router-policies', {
      name: uniqueName('erp'),
      semantic: 'AnyOf',
      identityRoles: [`@${identity}`],
      edgeRouterRoles: [`@${router}`, '#x'],
    });
    const serp = await create('/service-edge-router-policies', {
      name: uniqueName('serp'),
      semantic: 'AnyOf',
      serviceRoles: [`@${service}`],
      edgeRouterRoles: [`@${router}`],
    });
    const before = {
      sp: await detail(`/service-policies/${sp}`),
      erp: await detail(`/edge-router-policies/${erp}`),
      serp: await detail(`/service-edge-router-policies/${serp}`),
    };

    const identityDeletion = await admin({ method: 'DELETE', path: `/identities/${identity}` });
    expect(identityDeletion.status, identityDeletion.text).toBe(200);
    // The session reads its own write (docs/adr/0008): policy applied the deletion before answering.
    const spAfterIdentity = await detail(`/service-policies/${sp}`);
    expect(spAfterIdentity.identityRoles).toEqual(['#a', `@${kept}`]);
    expect(spAfterIdentity.identityRolesDisplay).toEqual([
      { role: '#a', name: '#a' },
      { role: `@${kept}`, name: `@${keptName}` },
    ]);
    const erpAfterIdentity = await detail(`/edge-router-policies/${erp}`);
    expect(erpAfterIdentity.identityRoles).toEqual([]);
    expect(erpAfterIdentity.identityRolesDisplay).toEqual([]);
    expect(await list('/service-policies', `anyOf(identityRoles) = "@${identity}"`)).toEqual([]);
    expect(await list('/edge-router-policies', `anyOf(identityRoles) = "@${identity}"`)).toEqual([]);
    // The audit trail records the rewrite as made by the request that deleted the identity.
    const rewrite = await theRecord(`entityId = "${sp}" and action = "updated"`);
    expect(rewrite).toMatchObject({
      entityType: 'servicePolicies',
      operation: 'management.deleteIdentity',
      requestId: identityDeletion.headers['x-request-id'],
      changes: { identityRoles: { before: ['#a', `@${identity}`, `@${kept}`].sort(), after: ['#a', `@${kept}`] } },
    });

    await remove(`/services/${service}`);
    expect((await detail(`/service-policies/${sp}`)).serviceRolesDisplay).toEqual([]);
    const serpAfterService = await detail(`/service-edge-router-policies/${serp}`);
    expect(serpAfterService.serviceRoles).toEqual([]);
    expect(serpAfterService.serviceRolesDisplay).toEqual([]);

    await remove(`/edge-routers/${router}`);
    const erpAfterRouter = await detail(`/edge-router-policies/${erp}`);
    expect(erpAfterRouter.edgeRouterRoles).toEqual(['#x']);
    expect(erpAfterRouter.edgeRouterRolesDisplay).toEqual(display(['#x']));
    const serpAfterRouter = await detail(`/service-edge-router-policies/${serp}`);
    expect(serpAfterRouter.edgeRouterRoles).toEqual([]);
    expect(serpAfterRouter.edgeRouterRolesDisplay).toEqual([]);
    expect(await list('/service-edge-router-policies', `anyOf(edgeRouterRoles) = "@${router}"`)).toEqual([]);

    await remove(`/posture-checks/${check}`);
    const spAfterCheck = await detail(`/service-policies/${sp}`);
    expect(spAfterCheck.postureCheckRoles).toEqual([]);
    expect(spAfterCheck.postureCheckRolesDisplay).toEqual([]);

    // As the reference: none of these rewrites touched updatedAt.
    expect(spAfterCheck.updatedAt).toBe(before.sp.updatedAt);
    expect(erpAfterRouter.updatedAt).toBe(before.erp.updatedAt);
    expect(serpAfterRouter.updatedAt).toBe(before.serp.updatedAt);
  });
});

describe('the system edge-router policy of a tunneler-enabled edge router', () => {
  it('comes with the router, shows in lists and by isSystem, is refused to change, and leaves with the tunneling or the router', async () => {
    const routerName = uniqueName('tun');
    const routerCreation = await admin({
      method: 'POST',
      path: '/edge-routers',
      body: { name: routerName, isTunnelerEnabled: true },
    });
    expect(routerCreation.status, routerCreation.text).toBe(201);
    const router = routerCreation.json.data.id as string;
    const path = `/edge-router-policies/${router}`;
    const system = await detail(path);
    expect(system).toMatchObject({
      id: router,
      name: `edge-router-${router}-system`,
      isSystem: true,
      semantic: 'AnyOf',
      identityRoles: [`@${router}`],
      edgeRouterRoles: [`@${router}`],
      edgeRouterRolesDisplay: [{ role: `@${router}`, name: `@${routerName}` }],
      tags: {},
    });
    // Its Router identity comes from auth (from the same router events): shown by name once policy has it.
    await waitFor(async () => {
      const d = await detail(path);
      return d.identityRolesDisplay[0]?.name === `@${routerName}`;
    }, "the system policy to show its Router identity's name");
    await waitFor(async () => {
      const res = await admin({ path: `${path}/identities` });
      return res.json.data?.[0]?.id === router;
    }, 'the system policy to select its Router identity');
    const routers = await admin({ path: `${path}/edge-routers` });
    expect(routers.json.data.map((r: { id: string }) => r.id)).toEqual([router]);
    expect(await theRecord(`entityId = "${router}" and entityType = "edgeRouterPolicies"`)).toMatchObject({
      action: 'created',
      operation: 'management.createEdgeRouter',
      requestId: routerCreation.headers['x-request-id'],
    });

    expect(await list('/edge-router-policies', `id = "${router}"`)).toEqual([router]);
    expect(await list('/edge-router-policies', 'isSystem = true')).toContain(router);
    expect(await list('/edge-router-policies', 'isSystem = false')).not.toContain(router);
    expect(await list('/edge-router-policies', `name = "edge-router-${router}-system"`)).toEqual([router]);

    const updateRefused = {
      code: 'ENTITY_CAN_NOT_BE_UPDATED',
      message: 'The entity requested for update can not be updated',
      cause: {
        code: 'UNHANDLED',
        message: `cannot update system edgeRouterPolicy in a non-system context (id=${router})`,
      },
    };
    const patch = await admin({ method: 'PATCH', path, body: { tags: { a: 'b' } } });
    expect(patch.status).toBe(400);
    expect(patch.json.error).toMatchObject(updateRefused);
    const put = await admin({
      method: 'PUT',
      path,
      body: { name: uniqueName('x'), semantic: 'AnyOf', identityRoles: [], edgeRouterRoles: [] },
    });
    expect(put.status).toBe(400);
    expect(put.json.error).toMatchObject(updateRefused);
    const del = await admin({ method: 'DELETE', path });
    expect(del.status).toBe(400);
    expect(del.json.error).toMatchObject({
      code: 'ENTITY_CAN_NOT_BE_DELETED',
      message: 'The entity requested for delete can not be deleted',
      cause: {
        code: 'UNHANDLED',
        message: `cannot delete system edgeRouterPolicy in a non-system context (id=${router})`,
      },
    });
    const taken = await admin({
      method: 'POST',
      path: '/edge-router-policies',
      body: { name: `edge-router-${router}-system`, semantic: 'AnyOf' },
    });
    expect(taken.status).toBe(400);
    expect(taken.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name' } });
    expect(await detail(path)).toMatchObject({ isSystem: true, tags: {} });

    // A rename changes neither its name nor its roles.
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${router}`, body: { name: `${routerName}-2` } })).status,
    ).toBe(200);
    expect(await detail(path)).toMatchObject({ name: `edge-router-${router}-system`, identityRoles: [`@${router}`] });

    // Tunneling off: gone; on again: back.
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${router}`, body: { isTunnelerEnabled: false } })).status,
    ).toBe(200);
    expect((await admin({ path })).status).toBe(404);
    expect(await list('/edge-router-policies', 'isSystem = true')).not.toContain(router);
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${router}`, body: { isTunnelerEnabled: true } })).status,
    ).toBe(200);
    expect(await detail(path)).toMatchObject({ isSystem: true, name: `edge-router-${router}-system` });

    // The router deleted: gone with it.
    await remove(`/edge-routers/${router}`);
    const gone = await admin({ path });
    expect(gone.status).toBe(404);
    expect(gone.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { message: `edgeRouterPolicy with id ${router} not found` },
    });
  });

  it('a router without tunneling has none', async () => {
    const router = await create('/edge-routers', { name: uniqueName('plain') });
    expect((await admin({ path: `/edge-router-policies/${router}` })).status).toBe(404);
    expect(await list('/edge-router-policies', `anyOf(edgeRouterRoles) = "@${router}"`)).toEqual([]);
  });
});
