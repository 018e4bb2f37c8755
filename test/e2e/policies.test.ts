import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * The three policy kinds end to end (ZITI-FACTS §5, §6, §12.6): CRUD with sorted roles and their
 * display names, role validation, lists with filters over fields and linked entities, system
 * edge-router policies, the caller matrix, and the access rows a service policy derives.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;

beforeAll(async () => {
  e = await startE2e();
  user = await e.createUser();
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

async function sql(service: 'policy', text: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: e.cluster.databases[service] });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

const detail = async (path: string) => {
  const res = await admin({ path });
  expect(res.status, res.text).toBe(200);
  return res.json.data;
};

const kinds = [
  {
    path: '/service-policies',
    body: (name: string) => ({ name, type: 'Dial', semantic: 'AllOf' }),
    roleFields: ['identityRoles', 'serviceRoles', 'postureCheckRoles'],
    links: ['self', 'services', 'identities', 'posture-checks'],
    singular: 'servicePolicy',
  },
  {
    path: '/edge-router-policies',
    body: (name: string) => ({ name, semantic: 'AllOf' }),
    roleFields: ['identityRoles', 'edgeRouterRoles'],
    links: ['self', 'edge-routers', 'identities'],
    singular: 'edgeRouterPolicy',
  },
  {
    path: '/service-edge-router-policies',
    body: (name: string) => ({ name, semantic: 'AllOf' }),
    roleFields: ['serviceRoles', 'edgeRouterRoles'],
    links: ['self', 'edge-routers', 'services'],
    singular: 'serviceEdgeRouterPolicy',
  },
] as const;

describe.each(kinds)('$path', (kind) => {
  it('two concurrent PATCHes of different fields both survive (the row is locked while it changes)', async () => {
    for (let i = 0; i < 5; i++) {
      const id = await create(kind.path, kind.body(uniqueName('pol-lock')));
      const field = kind.roleFields[0];
      const [a, b] = await Promise.all([
        admin({ method: 'PATCH', path: `${kind.path}/${id}`, body: { [field]: [`#lock${i}`] } }),
        admin({ method: 'PATCH', path: `${kind.path}/${id}`, body: { tags: { round: String(i) } } }),
      ]);
      expect([a.status, b.status]).toEqual([200, 200]);
      const after = await detail(`${kind.path}/${id}`);
      expect(after[field]).toEqual([`#lock${i}`]);
      expect(after.tags).toMatchObject({ round: String(i) });
    }
  });

  it('create answers 201 with the id; detail has sorted roles, their display names and the link set', async () => {
    const name = uniqueName('pol');
    const roles = Object.fromEntries(kind.roleFields.map((f) => [f, ['#zeta', '#alpha']]));
    const res = await admin({
      method: 'POST',
      path: kind.path,
      body: { ...kind.body(name), ...roles, tags: { a: 'b' } },
    });
    expect(res.status, res.text).toBe(201);
    const id = res.json.data.id as string;
    expect(res.json.data._links.self.href).toBe(`.${kind.path}/${id}`);

    const d = await detail(`${kind.path}/${id}`);
    expect(d).toMatchObject({ id, name, semantic: 'AllOf', tags: { a: 'b' } });
    for (const f of kind.roleFields) {
      expect(d[f]).toEqual(['#alpha', '#zeta']);
      expect(d[`${f}Display`]).toEqual([
        { role: '#alpha', name: '#alpha' },
        { role: '#zeta', name: '#zeta' },
      ]);
    }
    expect(Object.keys(d._links).sort()).toEqual([...kind.links].sort());
    for (const key of kind.links.filter((k) => k !== 'self'))
      expect(d._links[key].href).toBe(`.${kind.path}/${id}/${key}`);
    if (kind.path === '/edge-router-policies') expect(d.isSystem).toBe(false);
    if (kind.path === '/service-policies') expect(d.type).toBe('Dial');
  });

  it('PUT replaces (absent roles empty), PATCH keeps what is omitted and null tags clear, DELETE removes', async () => {
    const field = kind.roleFields[0];
    const other = kind.roleFields[1];
    const id = await create(kind.path, { ...kind.body(uniqueName('pol')), [field]: ['#a'], [other]: ['#b'] });
    const renamed = uniqueName('put');
    const put = await admin({
      method: 'PUT',
      path: `${kind.path}/${id}`,
      body: { ...kind.body(renamed), semantic: 'AnyOf', [field]: ['#c'], tags: { v: '1' } },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.json.data).toEqual({});
    const afterPut = await detail(`${kind.path}/${id}`);
    expect(afterPut).toMatchObject({
      name: renamed,
      semantic: 'AnyOf',
      [field]: ['#c'],
      [other]: [],
      tags: { v: '1' },
    });
    expect(Date.parse(afterPut.updatedAt)).toBeGreaterThanOrEqual(Date.parse(afterPut.createdAt));

    const patch = await admin({ method: 'PATCH', path: `${kind.path}/${id}`, body: { [other]: ['#d'], tags: null } });
    expect(patch.status, patch.text).toBe(200);
    expect(await detail(`${kind.path}/${id}`)).toMatchObject({
      name: renamed,
      semantic: 'AnyOf',
      [field]: ['#c'],
      [other]: ['#d'],
      // A null in a PATCH is no change, as in the reference (its JSON fields skip null values).
      tags: { v: '1' },
    });

    expect((await admin({ method: 'DELETE', path: `${kind.path}/${id}` })).status).toBe(200);
    const gone = await admin({ path: `${kind.path}/${id}` });
    expect(gone.status).toBe(404);
    expect(gone.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: 'UNHANDLED', message: `${kind.singular} with id ${id} not found` },
    });
    for (const method of ['PUT', 'PATCH', 'DELETE'] as const) {
      const res = await admin({
        method,
        path: `${kind.path}/${id}`,
        ...(method === 'DELETE' ? {} : { body: kind.body(uniqueName('x')) }),
      });
      expect(res.status, method).toBe(404);
    }
  });

  it('refuses bad roles, a missing @id, #all with others, a bad semantic and a duplicate name with the field', async () => {
    const field = kind.roleFields[0];
    const cases: [Record<string, unknown>, string, string][] = [
      [{ [field]: ['plain'] }, field, 'role entries must prefixed with #'],
      [{ [field]: ['#all', '#x'] }, field, 'if using #all, it should be the only role specified'],
      [{ [field]: ['@doesNotExist'] }, field, 'found with the given ids'],
      [{ semantic: 'Sometimes' }, 'semantic', ''],
    ];
    for (const [extra, f, reason] of cases) {
      const res = await admin({ method: 'POST', path: kind.path, body: { ...kind.body(uniqueName('bad')), ...extra } });
      expect(res.status, JSON.stringify(extra)).toBe(400);
      expect(res.json.error.code).toBe('COULD_NOT_VALIDATE');
      expect(res.json.error.cause.field).toBe(f);
      expect(res.json.error.cause.reason).toContain(reason);
    }
    const missingName = await admin({ method: 'POST', path: kind.path, body: { semantic: 'AllOf', type: 'Dial' } });
    expect(missingName.status).toBe(400);
    expect(missingName.json.error.cause.field).toBe('name');

    const name = uniqueName('dup');
    const id = await create(kind.path, kind.body(name));
    const dup = await admin({ method: 'POST', path: kind.path, body: kind.body(name) });
    expect(dup.status).toBe(400);
    expect(dup.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'name', value: name } });
    expect(dup.json.error.cause.reason).toContain('duplicate value');
    const otherId = await create(kind.path, kind.body(uniqueName('dup2')));
    const dupPatch = await admin({ method: 'PATCH', path: `${kind.path}/${otherId}`, body: { name } });
    expect(dupPatch.status).toBe(400);
    expect(dupPatch.json.error.cause.field).toBe('name');
    const badPatch = await admin({ method: 'PATCH', path: `${kind.path}/${id}`, body: { [field]: ['nope'] } });
    expect(badPatch.status).toBe(400);
    expect(badPatch.json.error.cause.field).toBe(field);
  });

  it('lists with filters on fields and role sets, sorting and paging', async () => {
    const prefix = uniqueName('lst');
    const ids: string[] = [];
    for (const [i, attr] of ['one', 'two', 'three'].entries()) {
      ids.push(
        await create(kind.path, {
          ...kind.body(`${prefix}-${i}`),
          [kind.roleFields[0]]: [`#${prefix}-${attr}`],
          tags: { n: String(i) },
        }),
      );
    }
    const list = async (query: string) => {
      const res = await admin({ path: `${kind.path}?${query}` });
      expect(res.status, res.text).toBe(200);
      return res.json;
    };
    const byName = await list(
      `filter=${encodeURIComponent(`name contains "${prefix}"`)}&sort=${encodeURIComponent('name desc')}&limit=2`,
    );
    expect(byName.data.map((p: { id: string }) => p.id)).toEqual([ids[2], ids[1]]);
    expect(byName.meta.pagination).toEqual({ limit: 2, offset: 0, totalCount: 3 });
    expect(byName.meta.filterableFields).toEqual(expect.arrayContaining(['name', 'semantic', ...kind.roleFields]));
    const page2 = await list(
      `filter=${encodeURIComponent(`name contains "${prefix}"`)}&sort=${encodeURIComponent('name desc')}&limit=2&offset=2`,
    );
    expect(page2.data.map((p: { id: string }) => p.id)).toEqual([ids[0]]);

    const byRole = await list(`filter=${encodeURIComponent(`anyOf(${kind.roleFields[0]}) = "#${prefix}-two"`)}`);
    expect(byRole.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
    const byTag = await list(`filter=${encodeURIComponent(`name contains "${prefix}" and tags.n = "2"`)}`);
    expect(byTag.data.map((p: { id: string }) => p.id)).toEqual([ids[2]]);
    const bySemantic = await list(`filter=${encodeURIComponent(`semantic = "AnyOf" and name contains "${prefix}"`)}`);
    expect(bySemantic.data).toEqual([]);

    const bad = await admin({ path: `${kind.path}?filter=${encodeURIComponent('nosuch = 1')}` });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_FILTER');
    const badSort = await admin({ path: `${kind.path}?sort=nosuch` });
    expect(badSort.status).toBe(400);
    expect(badSort.json.error.code).toBe('INVALID_SORT_IDENTIFIER');
  });

  it('anonymous and non-admin callers get 401 UNAUTHORIZED on every operation', async () => {
    const id = await create(kind.path, kind.body(uniqueName('auth')));
    const operations: [string, string][] = [
      ['GET', kind.path],
      ['POST', kind.path],
      ['GET', `${kind.path}/${id}`],
      ['PUT', `${kind.path}/${id}`],
      ['PATCH', `${kind.path}/${id}`],
      ['DELETE', `${kind.path}/${id}`],
    ];
    for (const [method, path] of operations) {
      const body = method === 'GET' || method === 'DELETE' ? undefined : kind.body(uniqueName('x'));
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', {
          method,
          path,
          ...(token ? { token } : {}),
          ...(body ? { body } : {}),
        });
        expect(res.status, `${method} ${path} as ${token ? 'non-admin' : 'anonymous'}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
    expect((await admin({ path: `${kind.path}/${id}` })).status).toBe(200);
  });
});

describe('service policies', () => {
  it('a bad type is refused with the field; Invalid is not a policy type', async () => {
    for (const type of ['Sideways', 'Invalid']) {
      const res = await admin({
        method: 'POST',
        path: '/service-policies',
        body: { name: uniqueName('t'), type, semantic: 'AnyOf' },
      });
      expect(res.status, type).toBe(400);
      expect(res.json.error).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'type' } });
    }
  });

  it('@id roles show the entity names; posture check ids are refused (none exist); filter type = 1 and by linked identities', async () => {
    const attr = uniqueName('attr');
    const identityName = uniqueName('alice');
    const identityId = await e.createIdentity({ name: identityName, roleAttributes: [attr] });
    const serviceName = uniqueName('svc');
    const serviceId = await create('/services', { name: serviceName, encryptionRequired: true });
    const id = await create('/service-policies', {
      name: uniqueName('dial'),
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`@${identityId}`, `#${attr}`],
      serviceRoles: [`@${serviceId}`],
    });
    const d = await detail(`/service-policies/${id}`);
    expect(d.identityRoles).toEqual([`#${attr}`, `@${identityId}`]);
    expect(d.identityRolesDisplay).toEqual([
      { role: `#${attr}`, name: `#${attr}` },
      { role: `@${identityId}`, name: `@${identityName}` },
    ]);
    expect(d.serviceRolesDisplay).toEqual([{ role: `@${serviceId}`, name: `@${serviceName}` }]);
    expect(d.postureCheckRoles).toEqual([]);

    const posture = await admin({
      method: 'PATCH',
      path: `/service-policies/${id}`,
      body: { postureCheckRoles: ['@somePostureCheck'] },
    });
    expect(posture.status).toBe(400);
    expect(posture.json.error.cause.field).toBe('postureCheckRoles');
    expect(
      (await admin({ method: 'PATCH', path: `/service-policies/${id}`, body: { postureCheckRoles: ['#all'] } })).status,
    ).toBe(200);

    const q = (filter: string) => admin({ path: `/service-policies?filter=${encodeURIComponent(filter)}` });
    const byType = await q(`type = 1 and id = "${id}"`);
    expect(byType.json.data.map((p: { id: string }) => p.id)).toEqual([id]);
    expect((await q(`type = 2 and id = "${id}"`)).json.data).toEqual([]);
    const byIdentity = await q(`anyOf(identities) = "${identityId}"`);
    expect(byIdentity.json.data.map((p: { id: string }) => p.id)).toEqual([id]);
    const byServiceName = await q(`anyOf(services.name) = "${serviceName}"`);
    expect(byServiceName.json.data.map((p: { id: string }) => p.id)).toEqual([id]);
  });

  it('a Dial policy selecting an identity by #attr and a service by @id derives identity_services; deleting it removes them', async () => {
    const attr = uniqueName('dialer');
    const identityId = await e.createIdentity({ roleAttributes: [attr] });
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    const id = await create('/service-policies', {
      name: uniqueName('dial'),
      type: 'Dial',
      semantic: 'AllOf',
      identityRoles: [`#${attr}`],
      serviceRoles: [`@${serviceId}`],
    });
    // The policy's derivation runs in its own transaction: the rows are there when create answers.
    expect(
      await sql('policy', 'select dial, bind from identity_services where identity_id = $1 and service_id = $2', [
        identityId,
        serviceId,
      ]),
    ).toEqual([{ dial: true, bind: false }]);
    expect(await sql('policy', 'select identity_id from service_policy_identities where policy_id = $1', [id])).toEqual(
      [{ identity_id: identityId }],
    );

    expect((await admin({ method: 'DELETE', path: `/service-policies/${id}` })).status).toBe(200);
    expect(await sql('policy', 'select * from identity_services where identity_id = $1', [identityId])).toEqual([]);
    expect(await sql('policy', 'select * from service_policy_identities where policy_id = $1', [id])).toEqual([]);
  });

  it('an identity created later with the attribute gains access through the existing policy (events)', async () => {
    const attr = uniqueName('later');
    const serviceId = await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    await create('/service-policies', {
      name: uniqueName('bind'),
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`#${attr}`],
      serviceRoles: [`@${serviceId}`],
    });
    const identityId = await e.createIdentity({ roleAttributes: [attr] });
    await waitFor(
      async () =>
        (
          await sql('policy', 'select bind from identity_services where identity_id = $1 and service_id = $2', [
            identityId,
            serviceId,
          ])
        )[0]?.bind === true,
      'the new identity to reach the service',
    );
  });
});

describe('edge-router policies', () => {
  it('a system policy can not be updated or deleted', async () => {
    const id = `sys-${uniqueName('erp')}`;
    await sql(
      'policy',
      `insert into edge_router_policies (id, name, semantic, identity_roles, edge_router_roles, is_system, created_at, updated_at)
       values ($1, $2, 'AnyOf', '{}', '{}', true, now(), now())`,
      [id, id],
    );
    expect((await detail(`/edge-router-policies/${id}`)).isSystem).toBe(true);
    const listed = await admin({ path: `/edge-router-policies?filter=${encodeURIComponent('isSystem = true')}` });
    expect(listed.json.data.map((p: { id: string }) => p.id)).toContain(id);
    for (const method of ['PUT', 'PATCH'] as const) {
      const res = await admin({
        method,
        path: `/edge-router-policies/${id}`,
        body: { name: uniqueName('x'), semantic: 'AllOf' },
      });
      expect(res.status, method).toBe(400);
      expect(res.json.error.code).toBe('ENTITY_CAN_NOT_BE_UPDATED');
    }
    const del = await admin({ method: 'DELETE', path: `/edge-router-policies/${id}` });
    expect(del.status).toBe(400);
    expect(del.json.error.code).toBe('ENTITY_CAN_NOT_BE_DELETED');
    await sql('policy', 'delete from edge_router_policies where id = $1', [id]);
  });

  it('@id edge routers show their names and filter through anyOf(edgeRouters)', async () => {
    const routerName = uniqueName('er');
    const routerId = await create('/edge-routers', { name: routerName });
    const identityId = await e.createIdentity();
    const id = await create('/edge-router-policies', {
      name: uniqueName('erp'),
      semantic: 'AnyOf',
      edgeRouterRoles: [`@${routerId}`],
      identityRoles: [`@${identityId}`],
    });
    const d = await detail(`/edge-router-policies/${id}`);
    expect(d.edgeRouterRolesDisplay).toEqual([{ role: `@${routerId}`, name: `@${routerName}` }]);
    const res = await admin({
      path: `/edge-router-policies?filter=${encodeURIComponent(`anyOf(edgeRouters) = "${routerId}" and anyOf(identities) = "${identityId}"`)}`,
    });
    expect(res.json.data.map((p: { id: string }) => p.id)).toEqual([id]);
  });
});

describe('/summary', () => {
  it('counts the policies', async () => {
    const counts = (await admin({ path: '/summary' })).json.data as Record<string, number>;
    for (const key of ['servicePolicies', 'edgeRouterPolicies', 'serviceEdgeRouterPolicies'])
      expect(Number.isInteger(counts[key]), key).toBe(true);
  });
});
