import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * `/summary` and `/database/*` end to end: counts gathered from every service, the cluster's one
 * integrity job finding drift planted in read models (policy's, auth's router identities) and the
 * fix repairing it, and snapshots written by every service.
 */
let e: E2e;
let user: Awaited<ReturnType<E2e['createUser']>>;
const snapshotDir = mkdtempSync(join(tmpdir(), 'ziti-e2e-snapshots-'));

beforeAll(async () => {
  e = await startE2e({ env: { ZITI_SNAPSHOT_DIR: snapshotDir } });
  user = await e.createUser();
});
afterAll(async () => {
  await e?.stop();
  rmSync(snapshotDir, { recursive: true, force: true });
});

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });

async function create(path: string, body: unknown): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  expect(res.status, `${path} ${res.text}`).toBe(201);
  return res.json.data.id as string;
}

async function sql(service: 'policy' | 'auth', text: string, params: unknown[] = []) {
  const client = new pg.Client({ connectionString: e.cluster.databases[service] });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

async function finishedResults() {
  return waitFor(
    async () => {
      const res = await admin({ path: '/database/data-integrity-results' });
      expect(res.status).toBe(200);
      return res.json.data.inProgress ? undefined : res.json;
    },
    'the integrity job to finish',
    60_000,
    200,
  );
}

describe('/summary', () => {
  it('counts every entity type, gathered from every service', async () => {
    const before = await admin({ path: '/summary' });
    expect(before.status).toBe(200);
    const counts = before.json.data as Record<string, number>;
    for (const key of [
      'identities',
      'identityTypes',
      'authPolicies',
      'authenticators',
      'configTypes',
      'configs',
      'services',
      'routers',
      'edgeRouters',
      'transitRouters',
      'terminators',
    ]) {
      expect(Number.isInteger(counts[key]), key).toBe(true);
    }
    expect(counts.configTypes).toBeGreaterThanOrEqual(5);
    expect(counts.identityTypes).toBe(2);
    await create('/services', { name: uniqueName('svc'), encryptionRequired: true });
    await create('/edge-routers', { name: uniqueName('er') });
    const after = (await admin({ path: '/summary' })).json.data as Record<string, number>;
    expect(after.services).toBe(counts.services! + 1);
    expect(after.edgeRouters).toBe(counts.edgeRouters! + 1);
    expect(after.routers).toBe(counts.routers! + 1);
  });
});

describe('data integrity', () => {
  it('answers before any check ran', async () => {
    const res = await admin({ path: '/database/data-integrity-results' });
    expect(res.status).toBe(200);
    expect(res.json.data).toMatchObject({ inProgress: false, fixingErrors: false, tooManyErrors: false, results: [] });
    expect(res.json.meta.pagination).toEqual({ limit: -1, offset: 0, totalCount: 0 });
  });

  it('a check finds drift planted in read models, a fix repairs it from the owners', async () => {
    const attr = uniqueName('ia').replace(/[^a-z]/g, '');
    const serviceName = uniqueName('svc');
    const serviceId = await create('/services', {
      name: serviceName,
      encryptionRequired: true,
      roleAttributes: [`${attr}svc`],
    });
    const routerId = await create('/edge-routers', {
      name: uniqueName('er'),
      roleAttributes: [`${attr}er`],
      isTunnelerEnabled: true,
    });
    const serviceAttrs = async () =>
      (await admin({ path: `/service-role-attributes?filter=${encodeURIComponent(`id contains "${attr}"`)}` })).json
        .data as string[];
    const routerAttrs = async () =>
      (await admin({ path: `/edge-router-role-attributes?filter=${encodeURIComponent(`id contains "${attr}"`)}` })).json
        .data as string[];
    await waitFor(
      async () => (await serviceAttrs()).length === 1 && (await routerAttrs()).length === 1,
      'the read models',
    );
    await waitFor(
      async () => (await sql('auth', 'select id from identities where id = $1', [routerId])).length === 1,
      'the router identity',
    );

    // Plant drift: a changed service, a service its owner never had, a lost edge router, a lost router identity.
    await sql(
      'policy',
      `update services set role_attributes = $2, state = jsonb_set(state, '{roleAttributes}', $3::jsonb) where id = $1`,
      [serviceId, [`${attr}planted`], JSON.stringify([`${attr}planted`])],
    );
    const ghost = `ghost${attr}`;
    await sql(
      'policy',
      `insert into services (id, name, role_attributes, state, source_sequence) values ($1, $1, $2, $3::jsonb, 1)`,
      [ghost, [`${attr}ghost`], JSON.stringify({ id: ghost, name: ghost })],
    );
    await sql('policy', 'delete from edge_routers where id = $1', [routerId]);
    await sql('auth', 'delete from identities where id = $1', [routerId]);
    expect((await serviceAttrs()).sort()).toEqual([`${attr}ghost`, `${attr}planted`]);
    expect(await routerAttrs()).toEqual([]);

    // One job at a time across the cluster: of two concurrent starts one is refused.
    const starts = await Promise.all([
      admin({ method: 'POST', path: '/database/check-data-integrity' }),
      admin({ method: 'POST', path: '/database/fix-data-integrity' }),
    ]);
    expect(starts.map((r) => r.status).sort()).toEqual([202, 429]);
    const refused = starts.find((r) => r.status === 429)!;
    expect(refused.json.error.code).toBe('RATE_LIMITED');
    const accepted = starts.find((r) => r.status === 202)!;
    expect(accepted.json).toEqual({ data: {}, meta: {} });
    const ranFix = starts[1]!.status === 202;

    let outcome = await finishedResults();
    if (ranFix) {
      // The fix won the race: run the check the test is about afterwards, on freshly planted drift.
      await sql('policy', 'delete from edge_routers where id = $1', [routerId]);
      await sql('auth', 'delete from identities where id = $1', [routerId]);
      await sql(
        'policy',
        `update services set role_attributes = $2, state = jsonb_set(state, '{roleAttributes}', $3::jsonb) where id = $1`,
        [serviceId, [`${attr}planted`], JSON.stringify([`${attr}planted`])],
      );
      await sql('policy', `update services set deleted = false where id = $1`, [ghost]);
      expect((await admin({ method: 'POST', path: '/database/check-data-integrity' })).status).toBe(202);
      outcome = await finishedResults();
    }
    const check = outcome.data;
    expect(check).toMatchObject({ inProgress: false, fixingErrors: false, tooManyErrors: false, error: '' });
    expect(Date.parse(check.endTime)).toBeGreaterThanOrEqual(Date.parse(check.startTime));
    expect(outcome.meta.pagination.totalCount).toBe(check.results.length);
    const found = (service: string, text: string) =>
      check.results.find(
        (r: { description: string }) => r.description.startsWith(`${service}: `) && r.description.includes(text),
      );
    expect(found('policy', `service ${serviceId}`)).toEqual({
      description: `policy: read model: service ${serviceId} (${serviceName}) differs from its owner in roleAttributes`,
      fixed: false,
    });
    expect(found('policy', `service ${ghost}`).description).toContain(
      'is in the read model but its owner no longer has it',
    );
    expect(found('policy', `edge router ${routerId}`).description).toContain('is missing from the read model');
    expect(found('auth', routerId)).toMatchObject({
      description: expect.stringContaining('has no router identity'),
      fixed: false,
    });
    // A check changes nothing.
    expect((await serviceAttrs()).sort()).toEqual([`${attr}ghost`, `${attr}planted`]);

    expect((await admin({ method: 'POST', path: '/database/fix-data-integrity' })).status).toBe(202);
    const fixed = (await finishedResults()).data;
    expect(fixed.fixingErrors).toBe(true);
    const mine = fixed.results.filter((r: { description: string }) =>
      [serviceId, ghost, routerId].some((id) => r.description.includes(id)),
    );
    expect(mine.length).toBeGreaterThanOrEqual(4);
    expect(mine.every((r: { fixed: boolean }) => r.fixed)).toBe(true);

    expect(await serviceAttrs()).toEqual([`${attr}svc`]);
    expect(await routerAttrs()).toEqual([`${attr}er`]);
    expect((await sql('auth', `select name, type_id from identities where id = $1`, [routerId]))[0]).toMatchObject({
      type_id: 'Router',
    });

    expect((await admin({ method: 'POST', path: '/database/check-data-integrity' })).status).toBe(202);
    const again = (await finishedResults()).data;
    expect(
      again.results.filter((r: { description: string }) =>
        [serviceId, ghost, routerId].some((id) => r.description.includes(id)),
      ),
    ).toEqual([]);
  });
});

describe('snapshots', () => {
  it('every service writes its own; a second within a minute is refused', async () => {
    const res = await admin({ method: 'POST', path: '/database/snapshot' });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ data: {}, meta: {} });
    const labels = readdirSync(snapshotDir);
    expect(labels).toHaveLength(1);
    const services = readdirSync(join(snapshotDir, labels[0]!)).sort();
    expect(services).toEqual(['audit', 'auth', 'inventory', 'pki-enrollment', 'policy']);
    for (const s of services) {
      const manifest = JSON.parse(readFileSync(join(snapshotDir, labels[0]!, s, 'manifest.json'), 'utf8'));
      expect(manifest).toMatchObject({ service: s, label: labels[0] });
    }
    expect(existsSync(join(snapshotDir, labels[0]!, 'inventory', 'config_types.jsonl'))).toBe(true);
    const identities = readFileSync(join(snapshotDir, labels[0]!, 'auth', 'identities.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(identities.map((l) => JSON.parse(l).is_default_admin)).toContain(true);

    const again = await admin({ method: 'POST', path: '/database/snapshot' });
    expect(again.status).toBe(429);
    expect(again.json.error.code).toBe('RATE_LIMITED');
    expect(readdirSync(snapshotDir)).toHaveLength(1);
  });
});

describe('who may call', () => {
  it('anonymous and non-admin callers get 401 UNAUTHORIZED', async () => {
    const cases = [
      { method: 'GET', path: '/summary' },
      { method: 'POST', path: '/database/check-data-integrity' },
      { method: 'POST', path: '/database/fix-data-integrity' },
      { method: 'GET', path: '/database/data-integrity-results' },
      { method: 'POST', path: '/database/snapshot' },
    ];
    for (const c of cases) {
      for (const token of [undefined, user.token]) {
        const res = await e.call('management', { method: c.method, path: c.path, ...(token ? { token } : {}) });
        expect(res.status, `${c.method} ${c.path}`).toBe(401);
        expect(res.json.error.code).toBe('UNAUTHORIZED');
      }
    }
  });
});
