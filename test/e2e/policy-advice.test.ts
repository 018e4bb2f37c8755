import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCsr } from '../../services/pki-enrollment/test/support.ts';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Policy advice (management `/identities/{id}/policy-advice/{serviceId}`) and the client's edge
 * router lists (`/current-identity/edge-routers`, `/services/{id}/edge-routers`), end to end on a
 * small network: a user dials one service and binds another through service policies, reaches two
 * routers (one enrolled, one not) through an edge-router policy; a third router is enrolled but
 * outside the user's policies; a service-edge-router policy gives the dialed service all three.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;
const n: Record<string, string> = {};
const names: Record<string, string> = {};

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
const client = (token: string | undefined, req: Parameters<E2e['call']>[1]) =>
  e.call('client', { ...req, ...(token ? { token } : {}) });

async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}

/** Enrolls a router with its erott token (CSRs made here): inventory then publishes it verified. */
async function enroll(id: string): Promise<void> {
  const token = (await admin({ path: `/edge-routers/${id}` })).json.data.enrollmentToken as string;
  const clientCsr = await makeCsr(`CN=${id}`);
  const serverCsr = await makeCsr(`CN=${id}`, [{ type: 'dns', value: 'router.example' }]);
  const res = await e.call('client', {
    method: 'POST',
    path: `/enroll?method=erott&token=${token}`,
    body: { certCsr: clientCsr.csrPem, serverCertCsr: serverCsr.csrPem },
  });
  if (res.status !== 200) throw new Error(`enroll ${id}: ${res.status} ${res.text}`);
}

beforeAll(async () => {
  e = await startE2e();
  const a = uniqueName('a');
  user = await e.createUser({ roleAttributes: [a] });
  names.other = uniqueName('other');
  n.other = await e.createIdentity({ name: names.other });
  for (const key of ['sDial', 'sBind', 'sHidden']) {
    names[key] = uniqueName(key);
    n[key] = await create('/services', { name: names[key], encryptionRequired: true });
  }
  // Names sort as rA < rB < rC, so the advice's common routers (by name) come in a known order.
  const prefix = uniqueName('r');
  for (const key of ['rA', 'rB', 'rC']) {
    names[key] = `${prefix}-${key}`;
    n[key] = await create('/edge-routers', { name: names[key], cost: 7 });
  }
  await enroll(n.rA!);
  await enroll(n.rC!);
  await create('/service-policies', {
    name: uniqueName('dial'),
    type: 'Dial',
    semantic: 'AllOf',
    identityRoles: [`#${a}`],
    serviceRoles: [`@${n.sDial}`],
  });
  await create('/service-policies', {
    name: uniqueName('bind'),
    type: 'Bind',
    semantic: 'AnyOf',
    identityRoles: [`@${user.id}`],
    serviceRoles: [`@${n.sBind}`],
  });
  // The user reaches rA (enrolled) and rB (not enrolled); rC (enrolled) is outside its policies.
  await create('/edge-router-policies', {
    name: uniqueName('erp'),
    semantic: 'AnyOf',
    identityRoles: [`#${a}`],
    edgeRouterRoles: [`@${n.rA}`, `@${n.rB}`],
  });
  await create('/service-edge-router-policies', {
    name: uniqueName('serp'),
    semantic: 'AllOf',
    serviceRoles: [`@${n.sDial}`],
    edgeRouterRoles: [`@${n.rA}`, `@${n.rB}`, `@${n.rC}`],
  });
  // The enrolments reach policy's read model by event, after the user's own writes: wait for them.
  await waitFor(async () => {
    const res = await admin({
      path: `/identities/${user.id}/edge-routers?filter=${encodeURIComponent('isVerified = true')}`,
    });
    return res.json.data.length === 1;
  }, 'rA verified in policy');
  await waitFor(async () => {
    const res = await admin({
      path: `/services/${n.sDial}/edge-routers?filter=${encodeURIComponent('isVerified = true')}`,
    });
    return res.json.data.length === 2;
  }, 'rA and rC verified in policy');
});
afterAll(async () => {
  await e?.stop();
});

const advice = (identityId: string, serviceId: string) =>
  admin({ path: `/identities/${identityId}/policy-advice/${serviceId}` });

describe('policy advice', () => {
  it('dial allowed, with the routers the identity and the service share', async () => {
    const res = await advice(user.id, n.sDial!);
    expect(res.status, res.text).toBe(200);
    const data = res.json.data;
    expect(data).toMatchObject({
      identityId: user.id,
      identity: { id: user.id, entity: 'identities', _links: { self: { href: `./identities/${user.id}` } } },
      serviceId: n.sDial,
      service: {
        id: n.sDial,
        name: names.sDial,
        entity: 'services',
        _links: { self: { href: `./services/${n.sDial}` } },
      },
      isDialAllowed: true,
      identityRouterCount: 2,
      serviceRouterCount: 3,
    });
    // omitempty in the reference: a false flag is not sent.
    expect(data).not.toHaveProperty('isBindAllowed');
    expect(data.commonRouters).toEqual([
      {
        _links: {
          self: { href: `./edge-routers/${n.rA}` },
          'edge-router-policies': { href: `./edge-routers/${n.rA}/edge-router-policies` },
        },
        entity: 'edge-routers',
        id: n.rA,
        name: names.rA,
        isOnline: false,
      },
      expect.objectContaining({ id: n.rB, name: names.rB, entity: 'edge-routers', isOnline: false }),
    ]);
    expect(res.json.meta).toEqual({});
  });

  it('bind allowed without any router for the service; nothing allowed for an identity without policies', async () => {
    const bind = (await advice(user.id, n.sBind!)).json.data;
    expect(bind).toMatchObject({ isBindAllowed: true, identityRouterCount: 2, commonRouters: [] });
    expect(bind).not.toHaveProperty('isDialAllowed');
    expect(bind).not.toHaveProperty('serviceRouterCount');

    const none = (await advice(n.other!, n.sHidden!)).json.data;
    expect(none).toMatchObject({ identityId: n.other, serviceId: n.sHidden, commonRouters: [] });
    expect(none.identity.name).toBe(names.other);
    for (const key of ['isDialAllowed', 'isBindAllowed', 'identityRouterCount', 'serviceRouterCount'])
      expect(none, key).not.toHaveProperty(key);

    const noRouters = (await advice(n.other!, n.sDial!)).json.data;
    expect(noRouters).toMatchObject({ serviceRouterCount: 3, commonRouters: [] });
    expect(noRouters).not.toHaveProperty('identityRouterCount');
  });

  it('an unknown identity or service is NOT_FOUND; only administrators may ask', async () => {
    const noIdentity = await advice('nope', n.sDial!);
    expect(noIdentity.status).toBe(404);
    expect(noIdentity.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: 'UNHANDLED', message: 'identity with id nope not found' },
    });
    const noService = await advice(user.id, 'nope');
    expect(noService.status).toBe(404);
    expect(noService.json.error).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: 'UNHANDLED', message: 'service with id nope not found' },
    });
    for (const token of [undefined, user.token]) {
      const res = await e.call('management', {
        path: `/identities/${user.id}/policy-advice/${n.sDial}`,
        ...(token ? { token } : {}),
      });
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
    }
  });
});

describe('client /current-identity/edge-routers', () => {
  it('a non-admin sees only the verified routers of its edge-router policies', async () => {
    const res = await client(user.token, { path: '/current-identity/edge-routers' });
    expect(res.status, res.text).toBe(200);
    expect(res.json.data.map((r: { id: string }) => r.id)).toEqual([n.rA]);
    expect(res.json.data[0]).toMatchObject({
      id: n.rA,
      name: names.rA,
      hostname: '',
      isOnline: false,
      syncStatus: 'SYNC_UNKNOWN',
      supportedProtocols: {},
      cost: null,
      noTraversal: null,
      disabled: false,
      _links: { self: { href: `./edge-routers/${n.rA}` } },
    });
    expect(res.json.data[0]).not.toHaveProperty('isVerified');
    expect(res.json.meta.pagination).toEqual({ limit: 10, offset: 0, totalCount: 1 });
  });

  it('an admin sees every verified router; filters apply', async () => {
    const all = await client(e.adminToken, { path: '/current-identity/edge-routers?limit=500' });
    const ids = all.json.data.map((r: { id: string }) => r.id);
    expect(ids).toEqual(expect.arrayContaining([n.rA, n.rC]));
    expect(ids).not.toContain(n.rB);
    const filtered = await client(e.adminToken, {
      path: `/current-identity/edge-routers?filter=${encodeURIComponent(`name = "${names.rC}"`)}`,
    });
    expect(filtered.json.data.map((r: { id: string }) => r.id)).toEqual([n.rC]);
    const none = await client(user.token, {
      path: `/current-identity/edge-routers?filter=${encodeURIComponent(`name = "${names.rC}"`)}`,
    });
    expect(none.json.data).toEqual([]);
  });

  it('anonymous callers get 401 UNAUTHORIZED', async () => {
    const res = await client(undefined, { path: '/current-identity/edge-routers' });
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe('UNAUTHORIZED');
  });
});

describe('client /services/{id}/edge-routers', () => {
  const routersOf = async (token: string, serviceId: string, query = '') => {
    const res = await client(token, { path: `/services/${serviceId}/edge-routers${query}` });
    expect(res.status, res.text).toBe(200);
    return res.json as {
      data: { edgeRouters: Record<string, unknown>[] };
      meta: { pagination: { limit: number; offset: number; totalCount: number } };
    };
  };

  it('the routers both the caller and the service reach, enrolled or not', async () => {
    const body = await routersOf(user.token, n.sDial!);
    expect(body.data.edgeRouters.map((r) => r.name).sort()).toEqual([names.rA, names.rB]);
    expect(body.data.edgeRouters.find((r) => r.name === names.rB)).toEqual({
      hostname: '',
      isOnline: false,
      name: names.rB,
      supportedProtocols: {},
      syncStatus: 'SYNC_UNKNOWN',
      cost: 7,
      noTraversal: false,
      disabled: false,
    });
    expect(body.meta.pagination).toEqual({ limit: 25, offset: 0, totalCount: 2 });

    const one = await routersOf(user.token, n.sDial!, `?filter=${encodeURIComponent(`name = "${names.rB}"`)}`);
    expect(one.data.edgeRouters.map((r) => r.name)).toEqual([names.rB]);
    const page = await routersOf(user.token, n.sDial!, '?limit=1&offset=1');
    expect(page.data.edgeRouters).toHaveLength(1);
    expect(page.meta.pagination).toEqual({ limit: 1, offset: 1, totalCount: 2 });

    // A service the user may bind but that no service-edge-router policy gives a router.
    expect((await routersOf(user.token, n.sBind!)).data.edgeRouters).toEqual([]);
  });

  it('a service the caller can not see is NOT_FOUND; admins see every service', async () => {
    for (const id of [n.sHidden!, 'nope']) {
      const res = await client(user.token, { path: `/services/${id}/edge-routers` });
      expect(res.status, id).toBe(404);
      expect(res.json.error.code).toBe('NOT_FOUND');
    }
    // The admin is in no edge-router policy: the service is visible, no router is shared.
    expect((await routersOf(e.adminToken, n.sHidden!)).data.edgeRouters).toEqual([]);
    expect((await client(e.adminToken, { path: '/services/nope/edge-routers' })).status).toBe(404);
  });

  it('anonymous callers get 401 UNAUTHORIZED', async () => {
    const res = await client(undefined, { path: `/services/${n.sDial}/edge-routers` });
    expect(res.status).toBe(401);
    expect(res.json.error.code).toBe('UNAUTHORIZED');
  });

  it('a session-token header is checked first: a bad one is 401 with its reason, an empty one is no token', async () => {
    const withToken = (token: string, serviceId = n.sDial!) =>
      client(user.token, { path: `/services/${serviceId}/edge-routers`, headers: { 'session-token': token } });
    const empty = await withToken('');
    expect(empty.status, empty.text).toBe(200);
    expect(empty.json.data.edgeRouters.map((r: { name: string }) => r.name).sort()).toEqual([names.rA, names.rB]);

    // A session's own token is a UUID (the legacy session token), which the reference's JWT parser
    // finds malformed too; this controller signs no service access token, so no key is known.
    const session = await client(user.token, {
      method: 'POST',
      path: '/sessions',
      body: { serviceId: n.sDial, type: 'Dial' },
    });
    expect(session.status, session.text).toBe(201);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const refused: [string, string][] = [
      [session.json.data.token as string, 'token is malformed: token contained an invalid number of segments'],
      [
        `${b64({ alg: 'RS256', kid: 'k1' })}.${b64({ sub: 'x' })}.sig`,
        'token is unverifiable: error while executing keyfunc: invalid kid: k1',
      ],
    ];
    for (const [token, reason] of refused) {
      const res = await withToken(token);
      expect(res.status, res.text).toBe(401);
      expect(res.json.error).toMatchObject({ code: 'UNAUTHORIZED', cause: { code: 'UNHANDLED', message: reason } });
      // Before the service is looked up: one the caller can not see is refused the same way, not 404.
      const hidden = await withToken(token, n.sHidden!);
      expect(hidden.status, hidden.text).toBe(401);
      expect(hidden.json.error.cause.message).toBe(reason);
    }
  });
});
