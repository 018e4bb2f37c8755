import { connect } from 'nats';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { infra, uniqueName } from '../support/infra.ts';

/**
 * What-if analysis (`POST /extensions/what-if`, issue 24) end to end on the cluster: a small network
 * built through the management API, a proposal answered from the real policy engine (responses
 * validated against the served spec, extensions merged), nothing changed by it (lists, policy's
 * outbox and the event stream), then the same changes applied through the API give what it said.
 */
let e: E2e;
const n: Record<string, string> = {};
const names: Record<string, string> = {};
let attr: (what: string) => string;

const admin = (req: Parameters<E2e['call']>[1]) => e.call('management', { ...req, token: e.adminToken });
async function create(path: string, body: Record<string, unknown>): Promise<string> {
  const res = await admin({ method: 'POST', path, body });
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.json.data.id as string;
}
const whatIf = (body: unknown, token = e.adminToken) =>
  e.call('management', { method: 'POST', path: '/extensions/what-if', token, body });

async function sql<T>(text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: e.cluster.databases.policy });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

/** How many events policy has published, per subject, on this cluster's stream. */
async function policyEvents(): Promise<Record<string, number>> {
  const nc = await connect({ servers: infra.natsUrl });
  try {
    const ns = e.cluster.namespace;
    const stream = `ZITI_EVENTS_${ns.replace(/[^A-Za-z0-9_-]/g, '_')}`;
    const info = await (
      await nc.jetstreamManager()
    ).streams.info(stream, {
      subjects_filter: `${ns}.ziti.evt.policy.>`,
    });
    return { ...(info.state.subjects ?? {}) };
  } finally {
    await nc.close();
  }
}

/** What the network looks like from policy's lists, its outbox and the stream. */
async function observed() {
  const list = async (path: string) => {
    const res = await admin({ path });
    expect(res.status, path).toBe(200);
    return res.json.data.map((x: { id: string }) => x.id).sort();
  };
  return {
    servicePolicies: await list('/service-policies?limit=500'),
    postureChecks: await list('/posture-checks?limit=500'),
    webIdentities: await list(`/services/${n.web}/identities?limit=500`),
    carolServices: await list(`/identities/${n.carol}/services?limit=500`),
    carolRouters: await list(`/identities/${n.carol}/edge-routers?limit=500`),
    identityAttributes: (await admin({ path: '/identity-role-attributes?limit=500' })).json.data,
    outbox: await sql<{ n: number; last: string }>(
      'select (select count(*)::int from outbox) as n, (select last from event_position) as last',
    ),
    events: await policyEvents(),
  };
}

beforeAll(async () => {
  e = await startE2e();
  const prefix = uniqueName('wi').replace(/[^a-z0-9]/g, '');
  attr = (what) => `${prefix}${what}`;
  for (const [key, roleAttributes] of [
    ['alice', [attr('dev')]],
    ['bob', [attr('ops')]],
    ['carol', []],
  ] as const) {
    names[key] = `${prefix}-${key}`;
    n[key] = await e.createIdentity({ name: names[key], roleAttributes });
  }
  names.web = `${prefix}-web`;
  n.web = await create('/services', { name: names.web, encryptionRequired: true, roleAttributes: [attr('web')] });
  for (const [key, roleAttributes] of [
    ['rDev', [attr('rdev')]],
    ['rOps', [attr('rops')]],
  ] as const) {
    names[key] = `${prefix}-${key}`;
    n[key] = await create('/edge-routers', { name: names[key], roleAttributes });
  }
  names.mfa = `${prefix}-mfa`;
  n.mfa = await create('/posture-checks', { typeId: 'MFA', name: names.mfa, roleAttributes: [attr('mfa')] });
  names.dial = `${prefix}-dial`;
  n.dial = await create('/service-policies', {
    name: names.dial,
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: [`#${attr('dev')}`],
    serviceRoles: [`#${attr('web')}`],
  });
  await create('/edge-router-policies', {
    name: `${prefix}-erp-dev`,
    semantic: 'AnyOf',
    identityRoles: [`#${attr('dev')}`],
    edgeRouterRoles: [`#${attr('rdev')}`],
  });
  await create('/edge-router-policies', {
    name: `${prefix}-erp-ops`,
    semantic: 'AnyOf',
    identityRoles: [`#${attr('ops')}`],
    edgeRouterRoles: [`#${attr('rops')}`],
  });
  await create('/service-edge-router-policies', {
    name: `${prefix}-serp`,
    semantic: 'AnyOf',
    serviceRoles: [`#${attr('web')}`],
    edgeRouterRoles: ['#all'],
  });
});
afterAll(async () => {
  await e?.stop();
});

describe('what-if', () => {
  it('answers what a new Bind policy and an identity’s new attributes would do, changes nothing, and equals applying them', async () => {
    const bindPolicy = {
      name: `${names.dial}-bind`,
      type: 'Bind',
      semantic: 'AnyOf',
      identityRoles: [`#${attr('ops')}`],
      serviceRoles: [`@${n.web}`],
      postureCheckRoles: [`#${attr('mfa')}`],
    };
    const changes = [
      { action: 'create', entityType: 'servicePolicies', body: bindPolicy },
      { action: 'patch', entityType: 'identities', id: n.carol, body: { roleAttributes: [attr('dev')] } },
      { action: 'patch', entityType: 'servicePolicies', id: n.dial, body: { identityRoles: [`#${attr('dev')}`] } },
    ];
    const before = await observed();
    const res = await whatIf({ changes });
    expect(res.status, res.text).toBe(200);
    const data = res.json.data;
    expect(data.truncated).toBe(false);
    expect(data.summary).toEqual({
      changes: 3,
      services: 1,
      dialGained: 1,
      dialLost: 0,
      bindGained: 1,
      bindLost: 0,
      edgeRouterPairs: 2,
      edgeRoutersGained: 2,
      edgeRoutersLost: 0,
      postureChecksStarted: 1,
      postureChecksStopped: 0,
    });
    const web = { id: n.web, name: names.web };
    const ref = (key: string) => ({ id: n[key], name: names[key] });
    expect(data.services).toEqual([
      {
        ...web,
        dial: { gained: [ref('carol')], lost: [], gainedCount: 1, lostCount: 0 },
        bind: { gained: [ref('bob')], lost: [], gainedCount: 1, lostCount: 0 },
        edgeRouters: {
          pairs: 2,
          identities: [
            { identity: ref('bob'), gained: [ref('rOps')], lost: [] },
            { identity: ref('carol'), gained: [ref('rDev')], lost: [] },
          ].sort((a, b) => (String(a.identity.name) < String(b.identity.name) ? -1 : 1)),
        },
        postureChecks: {
          started: [
            { postureCheck: ref('mfa'), policy: { id: expect.any(String), name: bindPolicy.name }, policyType: 'Bind' },
          ],
          stopped: [],
          startedCount: 1,
          stoppedCount: 0,
        },
      },
    ]);
    // Nothing was applied: the lists, policy's outbox and its events on the stream are as they were.
    expect(await observed()).toEqual(before);

    // The same changes for real, through the API: the lists move as the answer said.
    await create('/service-policies', bindPolicy);
    const patched = await admin({
      method: 'PATCH',
      path: `/identities/${n.carol}`,
      body: { roleAttributes: [attr('dev')] },
    });
    expect(patched.status).toBe(200);
    const after = await observed();
    expect(after.webIdentities).toEqual([...before.webIdentities, n.bob, n.carol].sort());
    expect(after.carolServices).toEqual([n.web]);
    expect(after.carolRouters).toEqual([n.rDev]);
    const advice = await admin({ path: `/identities/${n.bob}/policy-advice/${n.web}` });
    expect(advice.status).toBe(200);
    expect(advice.json.data).toMatchObject({ isBindAllowed: true });
    expect(advice.json.data.commonRouters.map((r: { id: string }) => r.id)).toEqual([n.rOps]);
  });

  it('answers the reverse for a deletion, and a no-op with nothing', async () => {
    const res = await whatIf({ changes: [{ action: 'delete', entityType: 'servicePolicies', id: n.dial }] });
    expect(res.status, res.text).toBe(200);
    const web = res.json.data.services.find((s: { id: string }) => s.id === n.web);
    expect(web.dial.lost.map((i: { id: string }) => i.id).sort()).toEqual([n.alice, n.carol].sort());
    expect(web.dial.gained).toEqual([]);
    const same = await whatIf({
      changes: [{ action: 'patch', entityType: 'services', id: n.web, body: { roleAttributes: [attr('web')] } }],
    });
    expect(same.status).toBe(200);
    expect(same.json.data.services).toEqual([]);
    expect(same.json.data.summary.services).toBe(0);
  });

  it('is for administrators only', async () => {
    const user = await e.createUser();
    const body = { changes: [{ action: 'delete', entityType: 'servicePolicies', id: n.dial }] };
    const refused = await whatIf(body, user.token);
    expect([refused.status, refused.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
    const anonymous = await e.call('management', { method: 'POST', path: '/extensions/what-if', body });
    expect(anonymous.status).toBe(401);
  });

  it('answers bad input with 400 naming the field, and an unknown id with the real operation’s 404', async () => {
    const field = async (body: unknown) => {
      const res = await whatIf(body);
      expect(res.status, res.text).toBe(400);
      expect(res.json.error.code).toBe('COULD_NOT_VALIDATE');
      return res.json.error.cause.field as string;
    };
    expect(await field({ changes: [] })).toBe('changes');
    expect(await field({})).toBe('changes');
    expect(await field({ changes: [{ action: 'create', entityType: 'configs', body: {} }] })).toBe(
      'changes.0.entityType',
    );
    expect(
      await field({
        changes: [
          { action: 'patch', entityType: 'identities', id: n.alice, body: { roleAttributes: [] } },
          { action: 'create', entityType: 'servicePolicies', body: { name: 'x', type: 'Dial', semantic: 'Most' } },
        ],
      }),
    ).toBe('changes.1.body.semantic');
    expect(
      await field({
        changes: [
          {
            action: 'create',
            entityType: 'edgeRouterPolicies',
            body: { name: 'y', semantic: 'AnyOf', identityRoles: ['#all', '#x'] },
          },
        ],
      }),
    ).toBe('changes.0.body.identityRoles');
    expect(
      await field({ changes: [{ action: 'patch', entityType: 'identities', id: n.alice, body: { name: 'renamed' } }] }),
    ).toBe('changes.0.body.name');
    expect(await field({ changes: [{ action: 'delete', entityType: 'identities', id: n.alice }] })).toBe(
      'changes.0.action',
    );
    expect(
      await field({ changes: [{ action: 'patch', entityType: 'servicePolicies', id: n.dial, body: [] }] }),
    ).toMatch(/^changes\.0\.body/);
    expect(await field({ changes: [{ action: 'delete', entityType: 'servicePolicies', id: n.dial }], limit: 0 })).toBe(
      'limit',
    );

    const real = await admin({ method: 'DELETE', path: '/service-policies/nope' });
    const missing = await whatIf({ changes: [{ action: 'delete', entityType: 'servicePolicies', id: 'nope' }] });
    expect(missing.status).toBe(404);
    const { requestId: _a, ...missingError } = missing.json.error;
    const { requestId: _b, ...realError } = real.json.error;
    expect(missingError).toEqual(realError);
    const identity = await whatIf({
      changes: [{ action: 'patch', entityType: 'identities', id: 'nope', body: { roleAttributes: ['a'] } }],
    });
    expect([identity.status, identity.json.error.code]).toEqual([404, 'NOT_FOUND']);
  });
});
