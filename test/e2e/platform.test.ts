import { X509Certificate } from 'node:crypto';
import { operations } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, base, startE2e } from '../support/e2e.ts';
import { implementedOperationKeys } from '../support/coverage.ts';

let e: E2e;

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

const apis = ['client', 'management'] as const;

describe('informational operations', () => {
  for (const api of apis) {
    it(`GET ${api} /version announces every API binding`, async () => {
      const res = await e.call(api, { path: '/version' });
      expect(res.status).toBe(200);
      expect(res.json.meta).toEqual({});
      const { apiVersions, version, capabilities } = res.json.data;
      expect(version).toMatch(/^v\d+\.\d+\.\d+/);
      expect(capabilities).toEqual([]);
      for (const key of ['edge', 'edge-client', 'edge-management'])
        expect(apiVersions[key].v1.path).toMatch(/^\/edge\//);
      expect(apiVersions['edge-management'].v1.apiBaseUrls).toEqual([
        `https://localhost:${e.cluster.port}/edge/management/v1`,
      ]);
    });

    it(`GET ${api} / answers the version too`, async () => {
      const res = await e.call(api, { path: '/' });
      expect(res.status).toBe(200);
      expect(res.json.data.apiVersions.edge.v1.path).toBe('/edge/client/v1');
    });

    it(`GET ${api} /enumerated-capabilities`, async () => {
      const res = await e.call(api, { path: '/enumerated-capabilities' });
      expect(res.json.data).toEqual(['OIDC_AUTH', 'HA_CONTROLLER']);
    });

    it(`GET ${api} /specs, /specs/{id} and a spec generated from the contracts`, async () => {
      const list = await e.call(api, { path: '/specs' });
      expect(list.json.data.map((s: { id: string }) => s.id)).toEqual(['edge-client']);
      const detail = await e.call(api, { path: '/specs/edge-management' });
      expect(detail.json.data).toMatchObject({
        id: 'edge-management',
        _links: { spec: { href: './specs/edge-management/spec' } },
      });
      const body = await e.call(api, { path: '/specs/edge-management/spec' });
      expect(body.status).toBe(200);
      const doc = JSON.parse(body.json.data);
      expect(doc.swagger).toBe('2.0');
      const paths = Object.keys(doc.paths);
      expect(paths.length).toBe(new Set(operations.filter((o) => o.api === 'management').map((o) => o.path)).size);
      const missing = await e.call(api, { path: '/specs/nope' });
      expect(missing.status).toBe(404);
      expect(missing.json.error.code).toBe('NOT_FOUND');
    });
  }

  it('GET /protocols (client API)', async () => {
    const res = await e.call('client', { path: '/protocols' });
    expect(res.json.data).toEqual({ https: { address: `localhost:${e.cluster.port}` } });
  });

  it('serves the controller CA chain as base64 PKCS#7 and the server certificate chains to it', async () => {
    for (const path of [
      '/.well-known/est/cacerts',
      `${base.client}/.well-known/est/cacerts`,
      `${base.management}/.well-known/est/cacerts`,
    ]) {
      const res = await e.http({ path });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/pkcs7-mime/);
      expect(res.headers['content-transfer-encoding']).toBe('base64');
      const lines = res.text.split('\n');
      expect(lines.slice(0, -1).every((l) => l.length === 64)).toBe(true);
      expect(res.text.endsWith('\n')).toBe(false);
    }
    expect(e.caPems).toHaveLength(2);
    const [signer, root] = e.caPems.map((p) => new X509Certificate(p));
    expect(root!.checkIssued(root!)).toBe(true);
    expect(signer!.checkIssued(root!) || signer!.verify(root!.publicKey)).toBe(true);
    // Every request of this suite already went over TLS trusting only these two certificates.
  });
});

describe('edge behaviour', () => {
  it('unknown paths are 404 NOT_FOUND with the error envelope', async () => {
    const res = await e.http({ path: `${base.management}/no-such-thing` });
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({
      error: { code: 'NOT_FOUND', message: 'The resource requested was not found or is no longer available' },
      meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
    });
    expect(res.json.error.requestId).toMatch(/^[0-9A-Za-z.-]{9}$/);
    expect(res.headers['x-request-id']).toBe(res.json.error.requestId);
  });

  it('a wrong method is 405 METHOD_NOT_ALLOWED', async () => {
    const res = await e.http({ method: 'PUT', path: `${base.client}/version` });
    expect(res.status).toBe(405);
    expect(res.json.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(res.headers.allow).toContain('GET');
  });

  it('answers CORS preflights and marks responses for any origin', async () => {
    const pre = await e.http({
      method: 'OPTIONS',
      path: `${base.management}/identities`,
      headers: { origin: 'https://console.example' },
    });
    expect(pre.status).toBe(200);
    expect(pre.headers['access-control-allow-origin']).toBe('https://console.example');
    expect(pre.headers['access-control-allow-credentials']).toBe('true');
    expect(String(pre.headers['access-control-allow-headers'])).toContain('zt-session');
  });

  it('tolerates a JSON body on GET, as the admin console sends', async () => {
    const res = await e.call('management', { path: '/version', body: {} });
    expect(res.status).toBe(200);
  });

  it('serves legacy un-prefixed paths as the client API', async () => {
    for (const path of ['/version', '/edge/v1/version']) {
      const res = await e.http({ path });
      expect(res.status).toBe(200);
      expect(res.json.data.apiVersions['edge-client'].v1.path).toBe('/edge/client/v1');
    }
  });

  it('refuses protected operations without a valid session: 401 UNAUTHORIZED', async () => {
    for (const token of [undefined, 'not-a-uuid', '6f1c2a54-5b0e-4a55-9c53-0c9a9b7a1f00']) {
      const res = await e.call('management', { path: '/identities', ...(token ? { token } : {}) });
      expect(res.status).toBe(401);
      expect(res.json.error.code).toBe('UNAUTHORIZED');
      expect(res.json.error.message).toBe(
        'The request could not be completed. The session is not authorized or the credentials are invalid',
      );
    }
  });

  it('routes every operation of both specs to its owner (implemented or 501)', async () => {
    const implemented = implementedOperationKeys();
    const open = operations.filter((o) => o.access === 'none');
    for (const op of open) {
      const path = base[op.api] + op.path.replace(/\{[^}]+\}/g, 'x');
      const res = await e.http({
        method: op.method,
        path,
        ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: {} }),
      });
      expect(res.status, `${op.method} ${path}`).not.toBe(405);
      if (res.status === 404)
        expect(res.json?.error?.cause?.message ?? '', `${op.method} ${path}`).not.toMatch(/^path /);
      if (!implemented.has(`${op.api}.${op.operationId}`)) {
        // Input is validated at the edge before dispatch, so an empty request may stop there.
        const expected = res.status === 400 ? 'COULD_NOT_VALIDATE' : 'NOT_IMPLEMENTED';
        expect([400, 501], `${op.method} ${path}`).toContain(res.status);
        expect(res.json.error.code, `${op.method} ${path}`).toBe(expected);
      }
    }
    for (const op of operations.filter((o) => o.access !== 'none')) {
      const path = base[op.api] + op.path.replace(/\{[^}]+\}/g, 'x');
      const res = await e.http({ method: op.method, path });
      expect(res.status, `${op.method} ${path}`).toBe(401);
    }
  });
});
