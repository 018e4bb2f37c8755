import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { inputLimits } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import type { HttpResponse } from '../support/http.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * Issue 12, input handling: each defect as a request, answered with a 4xx and the error envelope,
 * nothing written by a refused request (the fuzz suite in fuzz-operations.test.ts walks the rest).
 */

let e: E2e;
let admin: string;

beforeAll(async () => {
  e = await startE2e();
  admin = e.adminToken;
});
afterAll(async () => {
  await e?.stop();
});

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: admin, ...init });

function expectError(res: HttpResponse, status: number, code: string, field?: string): void {
  expect(res.status, res.text.slice(0, 300)).toBe(status);
  expect(res.json?.error?.code, res.text.slice(0, 300)).toBe(code);
  expect(res.json.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
  expect(res.json.error.requestId).toEqual(expect.any(String));
  if (field !== undefined) expect(res.json.error.cause?.field).toBe(field);
}

async function identityCount(): Promise<number> {
  const res = await mgmt('/identities?limit=1');
  return res.json.meta.pagination.totalCount as number;
}

function gatewayLog(): string {
  const dir = e.cluster.logDir;
  return readdirSync(dir)
    .filter((f) => f.startsWith('gateway-'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');
}

describe('NUL bytes (item 3)', () => {
  it('in a path id: 400 naming the parameter', async () => {
    expectError(await mgmt('/identities/a%00b'), 400, 'COULD_NOT_VALIDATE', 'id');
    expectError(await mgmt('/services/a%00b', { method: 'DELETE' }), 400, 'COULD_NOT_VALIDATE', 'id');
  });

  it('in a body string, a nested string or a map key: 400 naming the field, nothing created', async () => {
    const before = await identityCount();
    for (const [body, field] of [
      [{ name: 'a\u0000b', type: 'User', isAdmin: false }, 'name'],
      [
        { name: uniqueName('nul'), type: 'User', isAdmin: false, roleAttributes: ['ok', 'b\u0000'] },
        'roleAttributes.1',
      ],
      [{ name: uniqueName('nul'), type: 'User', isAdmin: false, tags: { k: 'v\u0000' } }, 'tags.k'],
      [{ name: uniqueName('nul'), type: 'User', isAdmin: false, tags: { 'k\u0000': 'v' } }, 'tags.k\u0000'],
      [
        { name: uniqueName('nul'), type: 'User', isAdmin: false, tags: { deep: { list: ['\u0000'] } } },
        'tags.deep.list.0',
      ],
    ] as const) {
      expectError(await mgmt('/identities', { method: 'POST', body }), 400, 'COULD_NOT_VALIDATE', field);
    }
    expect(await identityCount()).toBe(before);
  });

  it('in a query value: 400 (GET /services?configTypes=%00 was a 500, item 8)', async () => {
    expectError(await mgmt('/services?configTypes=%00'), 400, 'COULD_NOT_VALIDATE', 'configTypes');
    expectError(await e.call('client', { path: '/services?configTypes=%00', token: admin }), 400, 'COULD_NOT_VALIDATE');
    expectError(
      await mgmt(`/identities?filter=${encodeURIComponent('name = "a\u0000"')}`),
      400,
      'COULD_NOT_VALIDATE',
      'filter',
    );
  });
});

describe('deep and large JSON (item 4)', () => {
  it('an authenticate body nested 5000 deep is refused before parsing, without logging in', async () => {
    const res = await e.call('client', {
      method: 'POST',
      path: '/authenticate?method=password',
      headers: { 'content-type': 'application/json' },
      rawBody: '['.repeat(5000) + ']'.repeat(5000),
    });
    expectError(res, 400, 'COULD_NOT_PARSE_BODY');
    expect(res.json.error.cause.message).toMatch(/nested deeper than 32/);
  });

  it('an authenticate body over the small limit is a 413, without reading it', async () => {
    for (const size of [inputLimits.maxSmallBodyBytes + 2, 1_800_000]) {
      const res = await e.call('client', {
        method: 'POST',
        path: '/authenticate?method=password',
        headers: { 'content-type': 'application/json' },
        rawBody: '['.repeat(size / 2) + ']'.repeat(size / 2),
      });
      expectError(res, 413, 'REQUEST_ENTITY_TOO_LARGE');
    }
  });

  it('a logged-in body over 1 MiB is a 413; one under it but too deep a 400; nothing created', async () => {
    const before = await identityCount();
    const huge = { name: uniqueName('big'), type: 'User', isAdmin: false, tags: { x: 'y'.repeat(1024 * 1024) } };
    expectError(await mgmt('/identities', { method: 'POST', body: huge }), 413, 'REQUEST_ENTITY_TOO_LARGE');
    let deep: unknown = 'leaf';
    for (let i = 0; i < 40; i++) deep = { d: deep };
    const nested = { name: uniqueName('deep'), type: 'User', isAdmin: false, tags: { deep } };
    expectError(await mgmt('/identities', { method: 'POST', body: nested }), 400, 'COULD_NOT_PARSE_BODY');
    expect(await identityCount()).toBe(before);
  });

  it('none of it left a stack trace or an unhandled error in the gateway log', () => {
    const log = gatewayLog();
    expect(log).not.toMatch(/unhandled error/);
    expect(log).not.toMatch(/"stack"/);
  });
});

describe('long URLs (item 5)', () => {
  const filter = (length: number) => `name = "${'x'.repeat(length)}"`;

  it(`a filter of 20 kB is read (the limit is ${inputLimits.maxUrlLength} characters)`, async () => {
    const res = await mgmt(`/identities?filter=${encodeURIComponent(filter(20_000))}`);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([]);
  });

  it('a URL over the limit is a 414 with the envelope', async () => {
    const res = await mgmt(`/identities?filter=${encodeURIComponent(filter(inputLimits.maxUrlLength))}`);
    expectError(res, 414, 'URI_TOO_LONG');
  });

  it('a request head over Node’s maxHeaderSize is a 431 with the envelope, not a bare status or a reset', async () => {
    for (const length of [inputLimits.maxHeaderBytes, 1_000_000]) {
      const res = await mgmt(`/identities?filter=${encodeURIComponent(filter(length))}`);
      expectError(res, 431, 'REQUEST_HEADER_FIELDS_TOO_LARGE');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
    // The gateway still answers.
    expect((await mgmt('/identities?limit=1')).status).toBe(200);
  });

  it('a request Node’s parser refuses (a malformed request line) is a 400 with the envelope', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect({
        host: '127.0.0.1',
        port: e.cluster.port,
        servername: 'localhost',
        ca: e.caPems.join(''),
      });
      let text = '';
      socket.once('secureConnect', () => socket.write('GARBAGE \u0001 NOT-HTTP\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      socket.once('end', () => resolve(text));
      socket.once('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toMatch(/\r\nx-content-type-options: nosniff\r\n/);
    const envelope = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(envelope).toMatchObject({ error: { code: 'COULD_NOT_VALIDATE', requestId: expect.any(String) } });
  });
});

describe('over-long strings (item 6)', () => {
  it(`a name over ${inputLimits.maxNameLength} characters is a 400 naming it; a long tag value over ${inputLimits.maxTextLength}`, async () => {
    const before = await identityCount();
    const long = 'n'.repeat(inputLimits.maxNameLength + 1);
    const res = await mgmt('/identities', { method: 'POST', body: { name: long, type: 'User', isAdmin: false } });
    expectError(res, 400, 'COULD_NOT_VALIDATE', 'name');
    expect(res.json.error.cause.reason).toBe(`name in body should be at most ${inputLimits.maxNameLength} chars long`);
    expect(res.json.error.cause.value.length).toBeLessThan(100);
    const text = 't'.repeat(inputLimits.maxTextLength + 1);
    const tagged = { name: uniqueName('long'), type: 'User', isAdmin: false, tags: { note: text } };
    expectError(await mgmt('/identities', { method: 'POST', body: tagged }), 400, 'COULD_NOT_VALIDATE', 'tags.note');
    const attr = { name: uniqueName('long'), type: 'User', isAdmin: false, roleAttributes: [long] };
    expectError(
      await mgmt('/identities', { method: 'POST', body: attr }),
      400,
      'COULD_NOT_VALIDATE',
      'roleAttributes.0',
    );
    expect(await identityCount()).toBe(before);
    // At the limits, all is well.
    const ok = { name: 'n'.repeat(inputLimits.maxNameLength - 20) + uniqueName(''), type: 'User', isAdmin: false };
    expect((await mgmt('/identities', { method: 'POST', body: ok })).status).toBe(201);
  });

  it('a path id over the name limit is a 400', async () => {
    expectError(
      await mgmt(`/identities/${'i'.repeat(inputLimits.maxNameLength + 1)}`),
      400,
      'COULD_NOT_VALIDATE',
      'id',
    );
  });
});

describe('lone UTF-16 surrogates (item 7)', () => {
  it('in a name, a tag or a key: 400 naming the field, nothing created', async () => {
    const before = await identityCount();
    for (const [raw, field] of [
      ['{"name":"\\ud800","type":"User","isAdmin":false}', 'name'],
      [`{"name":"${uniqueName('s')}","type":"User","isAdmin":false,"tags":{"k":"a\\udc00b"}}`, 'tags.k'],
      [`{"name":"${uniqueName('s')}","type":"User","isAdmin":false,"tags":{"\\udbff":"v"}}`, 'tags.\udbff'],
    ] as const) {
      const res = await mgmt('/identities', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        rawBody: raw,
      });
      expectError(res, 400, 'COULD_NOT_VALIDATE', field);
    }
    // A proper pair (an emoji) is fine.
    const emoji = await mgmt('/identities', {
      method: 'POST',
      body: { name: `${uniqueName('e')}\ud83d\ude00`, type: 'User', isAdmin: false },
    });
    expect(emoji.status).toBe(201);
    expect(await identityCount()).toBe(before + 1);
  });
});

describe('single cases and unreadable bodies (items 8, 9)', () => {
  it('POST /identities/{id}/service-configs as text/plain is a 400 INVALID_CONTENT_TYPE', async () => {
    const id = await e.createIdentity();
    const res = await mgmt(`/identities/${id}/service-configs`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      rawBody: '[{"serviceId":"x","configId":"y"}]',
    });
    expectError(res, 400, 'INVALID_CONTENT_TYPE');
  });

  it('GET /identity-types?filter=tags.x = 1 answers an empty list', async () => {
    const res = await mgmt(`/identity-types?filter=${encodeURIComponent('tags.x = 1')}`);
    expect(res.status).toBe(200);
    expect(res.json.data).toEqual([]);
  });

  it('PATCH /identities/{id} with a JSON text sent as text/plain is a 400 and changes nothing', async () => {
    const id = await e.createIdentity({ roleAttributes: ['before'] });
    const res = await mgmt(`/identities/${id}`, {
      method: 'PATCH',
      headers: { 'content-type': 'text/plain' },
      rawBody: JSON.stringify({ roleAttributes: ['after'] }),
    });
    expectError(res, 400, 'INVALID_CONTENT_TYPE');
    expect((await mgmt(`/identities/${id}`)).json.data.roleAttributes).toEqual(['before']);
  });

  it('POST /identities/{id}/disable with a garbage body does not disable', async () => {
    const id = await e.createIdentity();
    for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'application/json' }, {}]) {
      const res = await mgmt(`/identities/${id}/disable`, { method: 'POST', headers, rawBody: 'garbage ]{' });
      expect(res.status, res.text).toBe(400);
      expect(['INVALID_CONTENT_TYPE', 'COULD_NOT_PARSE_BODY']).toContain(res.json.error.code);
    }
    expect((await mgmt(`/identities/${id}`)).json.data.disabled).toBe(false);
    // The same operation with its JSON body still works.
    const ok = await mgmt(`/identities/${id}/disable`, { method: 'POST', body: { durationMinutes: 5 } });
    expect(ok.status, ok.text).toBe(200);
    expect((await mgmt(`/identities/${id}`)).json.data.disabled).toBe(true);
  });

  it('an enrollment still reads its PEM body (the raw bodies the enroll endpoints take)', async () => {
    const res = await e.call('client', {
      method: 'POST',
      path: '/enroll/ott?token=00000000-0000-4000-8000-000000000000',
      headers: { 'content-type': 'application/x-pem-file' },
      rawBody: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n',
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).not.toBe('INVALID_CONTENT_TYPE');
  });
});

describe('PATCH with null (item 10): like the reference, a null key is no change', () => {
  it('PATCH /services/{id} {"roleAttributes": null} keeps the attributes', async () => {
    const created = await mgmt('/services', {
      method: 'POST',
      body: { name: uniqueName('svc'), encryptionRequired: true, roleAttributes: ['keep'] },
    });
    expect(created.status).toBe(201);
    const id = created.json.data.id as string;
    const res = await mgmt(`/services/${id}`, { method: 'PATCH', body: { roleAttributes: null, name: null } });
    expect(res.status, res.text).toBe(200);
    expect((await mgmt(`/services/${id}`)).json.data).toMatchObject({ roleAttributes: ['keep'] });
    expect((await mgmt(`/services/${id}`, { method: 'PATCH', body: { roleAttributes: [] } })).status).toBe(200);
    // cleared: null, as the reference reads an empty list back
    expect((await mgmt(`/services/${id}`)).json.data.roleAttributes).toBeNull();
  });

  it('an x-nullable field too: PATCH /identities/{id} {"externalId": null} keeps it', async () => {
    const externalId = uniqueName('ext');
    const id = await e.createIdentity({ externalId });
    const res = await mgmt(`/identities/${id}`, { method: 'PATCH', body: { externalId: null, tags: null } });
    expect(res.status, res.text).toBe(200);
    expect((await mgmt(`/identities/${id}`)).json.data.externalId).toBe(externalId);
  });
});

describe('transport headers (item 12)', () => {
  it('every answer carries HSTS, nosniff and no-store: a login, an error, a list, a preflight', async () => {
    const answers = [
      await e.call('client', {
        method: 'POST',
        path: '/authenticate?method=password',
        body: { username: e.cluster.adminUsername, password: e.cluster.adminPassword },
      }),
      await mgmt('/identities/nope'),
      await mgmt('/identities?limit=1'),
      await e.http({ method: 'OPTIONS', path: '/edge/management/v1/identities' }),
    ];
    for (const res of answers) {
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  const handshake = (options: { maxVersion: 'TLSv1.2' | 'TLSv1.3'; ciphers?: string }) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect({
        host: '127.0.0.1',
        port: e.cluster.port,
        servername: 'localhost',
        ca: e.caPems.join(''),
        minVersion: 'TLSv1.2',
        ...options,
      });
      socket.once('secureConnect', () => {
        const cipher = socket.getCipher().standardName;
        socket.end();
        resolve(cipher);
      });
      socket.once('error', reject);
    });

  it('TLS 1.2 offers no CBC suite; GCM and TLS 1.3 work', async () => {
    await expect(
      handshake({
        maxVersion: 'TLSv1.2',
        ciphers: 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384:ECDHE-RSA-AES256-SHA384',
      }),
    ).rejects.toThrow();
    expect(await handshake({ maxVersion: 'TLSv1.2' })).toMatch(/GCM|CHACHA20/);
    expect(await handshake({ maxVersion: 'TLSv1.3' })).toMatch(/^TLS_/);
  });
});
