import { X509Certificate, createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeCsr } from '../../services/pki-enrollment/test/support.ts';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Edge routers (with their Router identities in auth and the read model in policy), transit
 * routers under both paths, end to end on the real cluster with spec validation.
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

async function routerIdentity(id: string): Promise<{ id: string; name: string; typeId: string } | undefined> {
  const res = await admin({ path: `/identities?filter=${encodeURIComponent(`id="${id}"`)}` });
  return res.json.data[0];
}

describe('edge routers', () => {
  it('create with every field, detail with the fields of §12.2, list with roleFilter, replace, patch, delete', async () => {
    const attr = uniqueName('a').replace(/[^a-z]/g, '');
    const name = uniqueName('er');
    const id = await create('/edge-routers', {
      name,
      roleAttributes: [`${attr}2`, `${attr}1`],
      appData: { site: 'dc1' },
      cost: 12,
      noTraversal: true,
      disabled: false,
      tags: { rack: '7' },
    });
    expect(id).toMatch(/^[0-9A-Za-z]{9}$/);
    const detail = await admin({ path: `/edge-routers/${id}` });
    expect(detail.status).toBe(200);
    expect(detail.json.data).toMatchObject({
      id,
      name,
      hostname: '',
      isOnline: false,
      syncStatus: 'SYNC_UNKNOWN',
      supportedProtocols: {},
      cost: 12,
      noTraversal: true,
      disabled: false,
      appData: { site: 'dc1' },
      roleAttributes: [`${attr}1`, `${attr}2`],
      isVerified: false,
      isTunnelerEnabled: false,
      certPem: null,
      unverifiedFingerprint: null,
      unverifiedCertPem: null,
      versionInfo: { os: '', arch: '', version: '', revision: '', buildDate: '' },
      tags: { rack: '7' },
      _links: {
        self: { href: `./edge-routers/${id}` },
        'edge-router-policies': { href: `./edge-routers/${id}/edge-router-policies` },
      },
    });
    expect(detail.json.data.fingerprint).toBeUndefined();

    const other = await create('/edge-routers', { name: uniqueName('er'), roleAttributes: [`${attr}1`] });
    const ids = async (q: string) =>
      (await admin({ path: `/edge-routers?${q}` })).json.data.map((r: { id: string }) => r.id).sort();
    const roles = (list: string[]) => list.map((r) => `roleFilter=${encodeURIComponent(r)}`).join('&');
    expect(await ids(roles([`#${attr}1`, `#${attr}2`]))).toEqual([id]);
    expect(await ids(`${roles([`#${attr}1`, `#${attr}2`])}&roleSemantic=AnyOf`)).toEqual([id, other].sort());
    expect(await ids(`${roles([`#${attr}1`])}&filter=${encodeURIComponent('noTraversal = true')}`)).toEqual([id]);
    expect(
      await ids(
        `filter=${encodeURIComponent(`anyOf(roleAttributes) = "${attr}2" and isVerified = false and cost = 12`)}`,
      ),
    ).toEqual([id]);

    expect(
      (await admin({ method: 'PUT', path: `/edge-routers/${id}`, body: { name: `${name}-2`, cost: 3 } })).status,
    ).toBe(200);
    expect((await admin({ path: `/edge-routers/${id}` })).json.data).toMatchObject({
      name: `${name}-2`,
      cost: 3,
      noTraversal: false,
      roleAttributes: null, // none, as the reference shows an empty list
      appData: {},
      tags: {},
    });
    expect((await admin({ method: 'PATCH', path: `/edge-routers/${id}`, body: { disabled: true } })).status).toBe(200);
    expect((await admin({ path: `/edge-routers/${id}` })).json.data).toMatchObject({
      name: `${name}-2`,
      cost: 3,
      disabled: true,
    });
    expect((await admin({ method: 'DELETE', path: `/edge-routers/${id}` })).status).toBe(200);
    const gone = await admin({ path: `/edge-routers/${id}` });
    expect(gone.status).toBe(404);
    expect(gone.json.error.cause.message).toBe(`edgeRouter with id ${id} not found`);
  });

  it('refuses bad input with a 400 naming the field', async () => {
    const name = uniqueName('er');
    await create('/edge-routers', { name });
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: uniqueName('er'), cost: 70000 }, 'cost'],
      [{ name: uniqueName('er'), roleAttributes: ['#bad'] }, 'roleAttributes'],
      [{ name }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await admin({ method: 'POST', path: '/edge-routers', body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.json.error.cause.field).toBe(field);
    }
    const bad = await admin({ path: `/edge-routers?roleFilter=${encodeURIComponent('plain')}` });
    expect(bad.status).toBe(400);
    expect(bad.json.error.cause.field).toBe('roleFilter');
  });

  it('policy keeps a read model of edge routers: /edge-router-role-attributes follows them', async () => {
    const attr = uniqueName('era').replace(/[^a-z]/g, '');
    const id = await create('/edge-routers', { name: uniqueName('er'), roleAttributes: [attr] });
    const attrs = async () =>
      (await admin({ path: `/edge-router-role-attributes?filter=${encodeURIComponent(`id contains "${attr}"`)}` })).json
        .data as string[];
    await waitFor(async () => (await attrs()).includes(attr), 'the router attribute in policy');
    expect((await admin({ method: 'DELETE', path: `/edge-routers/${id}` })).status).toBe(200);
    await waitFor(async () => (await attrs()).length === 0, 'the attribute to leave with the router');
  });

  it('a tunneler-enabled router has a Router identity with its id: renamed with it, removed with its tunneling or itself', async () => {
    const name = uniqueName('er');
    const id = await create('/edge-routers', { name, isTunnelerEnabled: true });
    const identity = await waitFor(() => routerIdentity(id), 'the router identity');
    expect(identity).toMatchObject({ id, name, typeId: 'Router', isAdmin: false, type: { id: 'Router' } });

    const refused = await admin({ method: 'DELETE', path: `/identities/${id}` });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('ENTITY_CAN_NOT_BE_DELETED');

    expect((await admin({ method: 'PATCH', path: `/edge-routers/${id}`, body: { name: `${name}-b` } })).status).toBe(
      200,
    );
    await waitFor(async () => (await routerIdentity(id))?.name === `${name}-b`, 'the rename');
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${id}`, body: { isTunnelerEnabled: false } })).status,
    ).toBe(200);
    await waitFor(async () => (await routerIdentity(id)) === undefined, 'the identity to go with the tunneling');
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${id}`, body: { isTunnelerEnabled: true } })).status,
    ).toBe(200);
    await waitFor(() => routerIdentity(id), 'the identity back');
    const routers = await admin({ path: `/identities?filter=${encodeURIComponent('type="Router"')}` });
    expect(routers.json.data.map((i: { id: string }) => i.id)).toContain(id);
    expect((await admin({ method: 'DELETE', path: `/edge-routers/${id}` })).status).toBe(200);
    await waitFor(async () => (await routerIdentity(id)) === undefined, 'the identity to go with the router');
  });
});

describe('transit routers', () => {
  for (const path of ['/routers', '/transit-routers']) {
    it(`${path}: create, detail, list, replace, patch, delete`, async () => {
      const name = uniqueName('tr');
      const id = await create(path, { name, cost: 5, noTraversal: true, tags: { a: 'b' } });
      const detail = await admin({ path: `${path}/${id}` });
      expect(detail.json.data).toMatchObject({
        id,
        name,
        cost: 5,
        noTraversal: true,
        disabled: false,
        isOnline: false,
        isVerified: false,
        fingerprint: '',
        tags: { a: 'b' },
        _links: { self: { href: `.${path}/${id}` } },
      });
      const listed = await admin({ path: `${path}?filter=${encodeURIComponent(`name="${name}"`)}` });
      expect(listed.json.data.map((r: { id: string }) => r.id)).toEqual([id]);
      expect((await admin({ method: 'PUT', path: `${path}/${id}`, body: { name } })).status).toBe(200);
      expect((await admin({ path: `${path}/${id}` })).json.data).toMatchObject({
        cost: 0,
        noTraversal: false,
        tags: {},
      });
      expect((await admin({ method: 'PATCH', path: `${path}/${id}`, body: { disabled: true } })).status).toBe(200);
      expect((await admin({ path: `${path}/${id}` })).json.data.disabled).toBe(true);
      expect((await admin({ method: 'DELETE', path: `${path}/${id}` })).status).toBe(200);
      expect((await admin({ path: `${path}/${id}` })).status).toBe(404);
    });
  }

  it('edge and transit routers share names; the fabric paths show every router, the edge paths edge routers only', async () => {
    const name = uniqueName('r');
    const er = await create('/edge-routers', { name });
    const clash = await admin({ method: 'POST', path: '/routers', body: { name } });
    expect(clash.status).toBe(400);
    expect(clash.json.error.cause.field).toBe('name');
    // As the reference's router manager: an edge router is a router too.
    expect((await admin({ path: `/routers/${er}` })).json.data).toMatchObject({ id: er, name });
    expect((await admin({ path: `/transit-routers/${er}` })).status).toBe(200);
    const tr = await create('/transit-routers', { name: uniqueName('r') });
    expect((await admin({ path: `/edge-routers/${tr}` })).status).toBe(404);
    expect((await admin({ path: `/routers/${tr}` })).status).toBe(200);
    const both = await admin({ path: `/routers?filter=${encodeURIComponent(`id in ["${er}", "${tr}"]`)}` });
    expect(both.json.data.map((r: { id: string }) => r.id).sort()).toEqual([er, tr].sort());
    const edgeOnly = await admin({ path: `/edge-routers?filter=${encodeURIComponent(`id in ["${er}", "${tr}"]`)}` });
    expect(edgeOnly.json.data.map((r: { id: string }) => r.id)).toEqual([er]);
    // On the fabric paths an edge router is the reference's base router: verified, no enrollment
    // fields (its edge enrollment shows on /edge-routers); a transit router shows its own.
    const listed = new Map(both.json.data.map((r: { id: string }) => [r.id, r]));
    const edgeShown = listed.get(er) as Record<string, unknown>;
    expect(edgeShown.isVerified).toBe(true);
    expect(Object.keys(edgeShown).filter((k) => k.startsWith('enrollment'))).toEqual([]);
    expect((await admin({ path: `/edge-routers/${er}` })).json.data.enrollmentJwt).toEqual(expect.any(String));
    expect(listed.get(tr)).toMatchObject({ isVerified: false, enrollmentJwt: expect.any(String) });
  });
});

describe('who may call', () => {
  it('anonymous and non-admin callers get 401 UNAUTHORIZED', async () => {
    const cases: { method: string; path: string; body?: unknown }[] = [
      { method: 'GET', path: '/edge-routers' },
      { method: 'POST', path: '/edge-routers', body: { name: 'x' } },
      { method: 'POST', path: '/edge-routers/x/re-enroll' },
      { method: 'GET', path: '/routers' },
      { method: 'POST', path: '/transit-routers', body: { name: 'x' } },
      { method: 'GET', path: '/edge-router-role-attributes' },
    ];
    for (const c of cases) {
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', {
          method: c.method,
          path: c.path,
          ...(c.body ? { body: c.body } : {}),
          ...(token ? { token } : {}),
        });
        expect(res.status, `${c.method} ${c.path}`).toBe(401);
      }
    }
  });
});

describe('edge router enrollment (erott)', () => {
  const decodeJwt = (jwt: string) => {
    const [header, payload] = jwt.split('.');
    return {
      header: JSON.parse(Buffer.from(header!, 'base64url').toString()),
      claims: JSON.parse(Buffer.from(payload!, 'base64url').toString()),
    };
  };
  const sha1 = (pem: string) => createHash('sha1').update(new X509Certificate(pem).raw).digest('hex');
  const leafOf = (chain: string) => `${chain.split('-----END CERTIFICATE-----')[0]}-----END CERTIFICATE-----\n`;
  const routerCsrs = async (routerId: string, cn = routerId) => {
    const client = await makeCsr(`CN=${cn}`);
    const server = await makeCsr(`CN=${routerId}`, [
      { type: 'dns', value: 'router.example' },
      { type: 'ip', value: '127.0.0.1' },
    ]);
    return { client, server };
  };
  const enrollPath = (token: string) => `/enroll?method=erott&token=${token}`;

  it('a new router carries its erott JWT until it enrolls with CSRs made here; then it is verified with that certificate', async () => {
    const id = await create('/edge-routers', { name: uniqueName('er') });
    const detail = (await admin({ path: `/edge-routers/${id}` })).json.data;
    expect(detail).toMatchObject({ isVerified: false, certPem: null });
    expect(Date.parse(detail.enrollmentExpiresAt) - Date.parse(detail.enrollmentCreatedAt)).toBe(180 * 60_000);
    const { header, claims } = decodeJwt(detail.enrollmentJwt);
    expect(header.kid).toMatch(/^[0-9a-f]{40}$/);
    expect(claims).toMatchObject({
      em: 'erott',
      sub: id,
      jti: detail.enrollmentToken,
      iss: `https://localhost:${e.cluster.port}`,
    });
    const listed = await admin({ path: `/enrollments?filter=${encodeURIComponent(`edgeRouter="${id}"`)}` });
    expect(listed.json.data.map((x: { method: string }) => x.method)).toEqual(['erott']);

    const wrongCn = await routerCsrs(id, 'someone-else');
    const refused = await e.call('client', {
      method: 'POST',
      path: enrollPath(detail.enrollmentToken),
      body: { certCsr: wrongCn.client.csrPem, serverCertCsr: wrongCn.server.csrPem },
    });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('EDGE_ROUTER_ENROLL_COMMON_NAME_INVALID');
    const noCsr = await e.call('client', {
      method: 'POST',
      path: enrollPath(detail.enrollmentToken),
      body: { certCsr: wrongCn.client.csrPem },
    });
    expect(noCsr.status).toBe(400);
    expect(noCsr.json.error.code).toBe('MISSING_OR_INVALID_CSR');

    const csrs = await routerCsrs(id);
    const enrolled = await e.call('client', {
      method: 'POST',
      path: enrollPath(detail.enrollmentToken),
      body: { certCsr: csrs.client.csrPem, serverCertCsr: csrs.server.csrPem },
    });
    expect(enrolled.status, enrolled.text).toBe(200);
    const { ca, cert, serverCert } = enrolled.json.data;
    expect(ca).toBe(e.caPems.join(''));
    const clientLeaf = new X509Certificate(leafOf(cert));
    const serverLeaf = new X509Certificate(leafOf(serverCert));
    const signer = new X509Certificate(e.caPems[0]!);
    expect(clientLeaf.subject).toContain(`CN=${id}`);
    expect(clientLeaf.verify(signer.publicKey)).toBe(true);
    expect(serverLeaf.verify(signer.publicKey)).toBe(true);
    expect(serverLeaf.subjectAltName).toContain('DNS:router.example');
    expect(serverLeaf.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(clientLeaf.keyUsage ?? []).toEqual(expect.arrayContaining(['1.3.6.1.5.5.7.3.2']));

    const verified = (await admin({ path: `/edge-routers/${id}` })).json.data;
    expect(verified).toMatchObject({ isVerified: true, fingerprint: sha1(leafOf(cert)) });
    expect(verified.certPem).toContain('BEGIN CERTIFICATE');
    expect(verified.enrollmentJwt).toBeUndefined();
    expect(verified.enrollmentToken).toBeUndefined();
    const again = await e.call('client', {
      method: 'POST',
      path: enrollPath(detail.enrollmentToken),
      body: { certCsr: csrs.client.csrPem, serverCertCsr: csrs.server.csrPem },
    });
    expect(again.status).toBe(400);
    expect(again.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    expect(
      (await admin({ path: `/enrollments?filter=${encodeURIComponent(`edgeRouter="${id}"`)}` })).json.data,
    ).toEqual([]);

    // Extension with the current certificate: new certificates, and the old one stops working at once.
    const next = await routerCsrs(id);
    const extended = await e.call('client', {
      method: 'POST',
      path: '/enroll/extend/router',
      body: { certCsr: next.client.csrPem, serverCertCsr: next.server.csrPem },
      cert: cert,
      key: csrs.client.keyPem,
    });
    expect(extended.status, extended.text).toBe(200);
    const newCert = extended.json.data.cert as string;
    expect(new X509Certificate(leafOf(newCert)).verify(signer.publicKey)).toBe(true);
    expect(new X509Certificate(leafOf(extended.json.data.serverCert)).subjectAltName).toContain('DNS:router.example');
    expect((await admin({ path: `/edge-routers/${id}` })).json.data.fingerprint).toBe(sha1(leafOf(newCert)));
    const stale = await e.call('client', {
      method: 'POST',
      path: '/enroll/extend/router',
      body: { certCsr: next.client.csrPem, serverCertCsr: next.server.csrPem },
      cert: cert,
      key: csrs.client.keyPem,
    });
    expect(stale.status).toBe(401);
    expect(stale.json.error.code).toBe('UNAUTHORIZED');
    const noCert = await e.call('client', {
      method: 'POST',
      path: '/enroll/extend/router',
      body: { certCsr: next.client.csrPem, serverCertCsr: next.server.csrPem },
    });
    expect(noCert.status).toBe(401);
    const third = await routerCsrs(id);
    const withNew = await e.call('client', {
      method: 'POST',
      path: '/enroll/extend/router',
      body: { certCsr: third.client.csrPem, serverCertCsr: third.server.csrPem },
      cert: newCert,
      key: next.client.keyPem,
    });
    expect(withNew.status, withNew.text).toBe(200);

    // Re-enroll: awaiting enrollment again with a new JWT, every other property kept.
    expect(
      (await admin({ method: 'PATCH', path: `/edge-routers/${id}`, body: { roleAttributes: ['kept'], cost: 9 } }))
        .status,
    ).toBe(200);
    const reEnroll = await admin({ method: 'POST', path: `/edge-routers/${id}/re-enroll` });
    expect(reEnroll.status).toBe(200);
    expect(reEnroll.json).toEqual({ data: {}, meta: {} });
    const awaiting = (await admin({ path: `/edge-routers/${id}` })).json.data;
    expect(awaiting).toMatchObject({
      isVerified: false,
      certPem: null,
      roleAttributes: ['kept'],
      cost: 9,
      name: detail.name,
    });
    expect(awaiting.fingerprint).toBeUndefined();
    expect(awaiting.enrollmentToken).toMatch(/^[0-9a-f-]{36}$/);
    expect(awaiting.enrollmentToken).not.toBe(detail.enrollmentToken);
    const afterReEnroll = await e.call('client', {
      method: 'POST',
      path: '/enroll/extend/router',
      body: { certCsr: third.client.csrPem, serverCertCsr: third.server.csrPem },
      cert: withNew.json.data.cert,
      key: third.client.keyPem,
    });
    expect(afterReEnroll.status).toBe(401);

    // The spec's own path and body names enroll it again.
    const viaPath = await routerCsrs(id);
    const specPath = await e.call('client', {
      method: 'POST',
      path: '/enroll/erott',
      body: { token: awaiting.enrollmentToken, clientCsr: viaPath.client.csrPem, serverCsr: viaPath.server.csrPem },
    });
    expect(specPath.status, specPath.text).toBe(200);
    expect((await admin({ path: `/edge-routers/${id}` })).json.data).toMatchObject({
      isVerified: true,
      fingerprint: sha1(leafOf(specPath.json.data.cert)),
    });
    expect((await admin({ method: 'POST', path: '/edge-routers/nope/re-enroll' })).status).toBe(404);
  });

  it('a router’s pending enrollment leaves with it; other tokens and unknown tokens are refused on /enroll/erott', async () => {
    const id = await create('/edge-routers', { name: uniqueName('er') });
    const token = (await admin({ path: `/edge-routers/${id}` })).json.data.enrollmentToken as string;
    expect((await admin({ method: 'DELETE', path: `/edge-routers/${id}` })).status).toBe(200);
    expect(
      (await admin({ path: `/enrollments?filter=${encodeURIComponent(`edgeRouter="${id}"`)}` })).json.data,
    ).toEqual([]);
    const csrs = await routerCsrs(id);
    const gone = await e.call('client', {
      method: 'POST',
      path: enrollPath(token),
      body: { certCsr: csrs.client.csrPem, serverCertCsr: csrs.server.csrPem },
    });
    expect(gone.status).toBe(400);
    expect(gone.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    const unknown = await e.call('client', {
      method: 'POST',
      path: '/enroll/erott',
      body: { token: randomUUID(), clientCsr: csrs.client.csrPem, serverCsr: csrs.server.csrPem },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('INVALID_ENROLLMENT_TOKEN');
    // A transit router comes with its own enrollment (trott), as the reference's does.
    const transit = await create('/transit-routers', { name: uniqueName('tr') });
    const shown = (await admin({ path: `/transit-routers/${transit}` })).json.data;
    expect(shown).toMatchObject({ isVerified: false, enrollmentToken: expect.any(String) });
    expect(decodeJwt(shown.enrollmentJwt).claims).toMatchObject({ em: 'trott', sub: transit });
  });
});
