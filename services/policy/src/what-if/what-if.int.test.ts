import {
  ApiError,
  type EdgeRouterState,
  type EventDefinition,
  type IdentityState,
  type ServiceState,
  eventTypes,
  inventoryEventTypes,
} from '@ziti/contracts';
import {
  type Database,
  type EventHandler,
  createLogger,
  inEventTransaction,
  queryRows,
  trackProduced,
} from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../../test/support/prng.ts';
import { identityFixture, policyTestDatabase, routerFixture, serviceFixture } from '../../test/support.ts';
import { policyEngineWiring } from '../policies/policy-engine.wiring.ts';
import {
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from '../read-models/read-model-events.transport.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgIdentityServiceConfigsReadModel,
} from '../read-models/read-models.store.ts';
import type { WhatIfAnswer } from './what-if-diff.domain.ts';
import type { ProposedChange } from './what-if.domain.ts';
import { proposedChangesOf } from './what-if.mapper.ts';

/**
 * What-if on real Postgres: on a generated network, seeded random proposals (one to three changes
 * each, of every kind) are analysed, then applied for real through the same domain services and
 * the same consumer path an owner's event takes; the what-if's answer must equal the difference
 * of the network read in full before and after — and the analysis must leave nothing behind.
 */
let database: Database;
let drop: () => Promise<void>;
let engine: ReturnType<typeof policyEngineWiring>;
let position = 0;
const handlers = new Map<string, EventHandler>();

const seed = Number(process.env.WHAT_IF_SEED ?? 24);
const rnd = mulberry32(seed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
const chance = (p: number) => rnd() < p;
const some = (pool: string[], max: number) => [
  ...new Set(Array.from({ length: 1 + Math.floor(rnd() * max) }, () => pick(pool))),
];
const pool = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const identityAttrs = pool('ia', 16);
const serviceAttrs = pool('sa', 8);
const routerAttrs = pool('ra', 6);
const checkAttrs = pool('pa', 4);

/** What an owner's event does in policy: the consumer's handler for it, in a transaction of its own. */
async function deliver(def: EventDefinition, source: 'auth' | 'inventory', data: { id: string }) {
  const handler = handlers.get(def.type)!;
  const sequence = ++position;
  await inEventTransaction(database, 'policy', undefined, (tx, events) =>
    handler.handle(
      tx,
      { id: `${source}:${sequence}`, type: def.type, version: def.version, source, sequence, occurredAt: '', data },
      events,
    ),
  );
}

const rows = <T = Record<string, unknown>>(sql: string, params: unknown[] = []) =>
  queryRows<T>(database.db, sql, params);
const ids = async (table: string) =>
  (await rows<{ id: string }>(`select id from ${table} order by id`)).map((r) => r.id);

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('wif'));
  engine = policyEngineWiring(database, undefined);
  const logger = createLogger('what-if-test', 'silent');
  const subscriptions = [
    authReadModelSubscription(engine.identities, engine.derive, logger),
    inventoryReadModelSubscription(
      {
        services: engine.services,
        edgeRouters: engine.edgeRouters,
        configs: (db) => new PgConfigReadModel(db),
        configTypes: (db) => new PgConfigTypeReadModel(db),
        overrides: (db) => new PgIdentityServiceConfigsReadModel(db),
        presence: engine.routerPresence,
      },
      engine.derive,
      logger,
    ),
  ];
  for (const s of subscriptions) for (const h of s.handlers) handlers.set(h.type, h);

  // The network: 200 identities, 40 services, 20 edge routers, 6 posture checks, 64 policies.
  const identityIds = Array.from({ length: 200 }, (_, i) => `wi-${String(i).padStart(3, '0')}`);
  for (const id of identityIds)
    await deliver(eventTypes.identityCreated, 'auth', identityFixture(id, some(identityAttrs, 2)));
  const serviceIds = Array.from({ length: 40 }, (_, i) => `ws-${String(i).padStart(2, '0')}`);
  for (const id of serviceIds)
    await deliver(inventoryEventTypes.serviceCreated, 'inventory', serviceFixture(id, some(serviceAttrs, 1)));
  for (let i = 0; i < 20; i++)
    await deliver(
      inventoryEventTypes.edgeRouterCreated,
      'inventory',
      routerFixture(`wr-${String(i).padStart(2, '0')}`, some(routerAttrs, 2)),
    );
  for (let i = 0; i < 6; i++)
    await engine.postureChecks.create({ typeId: 'MFA', name: `check-${i}`, roleAttributes: some(checkAttrs, 1) });
  for (let i = 0; i < 40; i++) await engine.policies.service.create(servicePolicyBody(`sp-${i}`));
  for (let i = 0; i < 12; i++) await engine.policies.edgeRouter.create(edgeRouterPolicyBody(`erp-${i}`));
  for (let i = 0; i < 12; i++) await engine.policies.serviceEdgeRouter.create(serviceEdgeRouterPolicyBody(`serp-${i}`));
}, 120_000);
afterAll(async () => drop?.());

/** Roles: mostly attributes, sometimes ids, now and then `#all` (ids drawn from a small fixed set). */
function roles(attrs: string[], idPool: string[]): string[] {
  const r = rnd();
  if (r < 0.04) return ['#all'];
  if (r < 0.15 && idPool.length > 0) return [`@${pick(idPool)}`];
  if (r < 0.2) return [];
  return some(attrs, 2).map((a) => `#${a}`);
}
const someIdentities = ['wi-001', 'wi-002', 'wi-150'];
const someServices = ['ws-01', 'ws-02', 'ws-30'];
const someRouters = ['wr-01', 'wr-05'];
const semantic = () => (chance(0.7) ? 'AnyOf' : 'AllOf');
function servicePolicyBody(name: string) {
  return {
    name,
    type: chance(0.7) ? 'Dial' : 'Bind',
    semantic: semantic(),
    identityRoles: roles(identityAttrs, someIdentities),
    serviceRoles: roles(serviceAttrs, someServices),
    postureCheckRoles: chance(0.4) ? some(checkAttrs, 1).map((a) => `#${a}`) : [],
  };
}
function edgeRouterPolicyBody(name: string) {
  return {
    name,
    semantic: semantic(),
    identityRoles: roles(identityAttrs, someIdentities),
    edgeRouterRoles: roles(routerAttrs, someRouters),
  };
}
function serviceEdgeRouterPolicyBody(name: string) {
  return {
    name,
    semantic: semantic(),
    serviceRoles: roles(serviceAttrs, someServices),
    edgeRouterRoles: roles(routerAttrs, someRouters),
  };
}

/** A patch body: a few of the create body's fields (never the name, so names stay put). */
function patchOf(body: Record<string, unknown>): Record<string, unknown> {
  const keys = Object.keys(body).filter((k) => k !== 'name');
  const chosen = keys.filter(() => chance(0.5));
  if (chosen.length === 0) chosen.push(pick(keys));
  return Object.fromEntries(chosen.map((k) => [k, body[k]]));
}

let created = 0;
/** Ids a proposal already names: a later change of the same proposal picks another (a deleted one is gone). */
const named = new Set<string>();
const pickId = async (table: string) => pick((await ids(table)).filter((id) => !named.has(id)));
/** One random proposal of any kind, on the network as it is now. */
async function randomChange(): Promise<Record<string, unknown>> {
  const change = await randomChangeOf();
  if (typeof change.id === 'string') named.add(change.id);
  return change;
}
async function randomChangeOf(): Promise<Record<string, unknown>> {
  const kinds = [
    ['servicePolicies', 'service_policies', servicePolicyBody],
    ['edgeRouterPolicies', 'edge_router_policies', edgeRouterPolicyBody],
    ['serviceEdgeRouterPolicies', 'service_edge_router_policies', serviceEdgeRouterPolicyBody],
  ] as const;
  const what = Math.floor(rnd() * 16);
  if (what < 9) {
    const [entityType, table, body] = kinds[what % 3]!;
    const action = (['create', 'patch', 'delete'] as const)[Math.floor(what / 3)]!;
    if (action === 'create') return { action, entityType, body: body(`new-${seed}-${++created}`) };
    const id = await pickId(table);
    return action === 'patch' ? { action, entityType, id, body: patchOf(body('x')) } : { action, entityType, id };
  }
  if (what < 12) {
    const action = (['create', 'patch', 'delete'] as const)[what - 9]!;
    if (action === 'create')
      return {
        action,
        entityType: 'postureChecks',
        body: { typeId: 'MFA', name: `new-check-${seed}-${++created}`, roleAttributes: some(checkAttrs, 2) },
      };
    const id = await pickId('posture_checks');
    return action === 'patch'
      ? { action, entityType: 'postureChecks', id, body: { typeId: 'MFA', roleAttributes: some(checkAttrs, 2) } }
      : { action, entityType: 'postureChecks', id };
  }
  const [entityType, table, attrs] = pick([
    ['identities', 'identities', identityAttrs],
    ['services', 'services', serviceAttrs],
    ['edgeRouters', 'edge_routers', routerAttrs],
  ] as const);
  const roleAttributes = chance(0.1) ? [] : some(attrs, 3);
  return { action: 'patch', entityType, id: await pickId(table), body: { roleAttributes } };
}

/** Applies a proposal for real: the domain services' own units of work, or the owner's event. */
async function applyForReal(change: ProposedChange): Promise<void> {
  switch (change.entityType) {
    case 'identities':
    case 'services':
    case 'edgeRouters': {
      const table = { identities: 'identities', services: 'services', edgeRouters: 'edge_routers' }[change.entityType];
      const [row] = await rows<{ state: Record<string, unknown> }>(`select state from ${table} where id = $1`, [
        change.id,
      ]);
      const state = { ...row!.state, roleAttributes: [...new Set(change.roleAttributes ?? [])].sort() };
      if (change.entityType === 'identities') await deliver(eventTypes.identityUpdated, 'auth', state as IdentityState);
      else if (change.entityType === 'services')
        await deliver(inventoryEventTypes.serviceUpdated, 'inventory', state as ServiceState);
      else await deliver(inventoryEventTypes.edgeRouterUpdated, 'inventory', state as EdgeRouterState);
      return;
    }
    case 'postureChecks':
      if (change.action === 'create') await engine.postureChecks.create(change.body);
      else if (change.action === 'patch') await engine.postureChecks.update(change.id, change.body, 'patch');
      else await engine.postureChecks.delete(change.id);
      return;
    default: {
      const kind = {
        servicePolicies: 'service',
        edgeRouterPolicies: 'edgeRouter',
        serviceEdgeRouterPolicies: 'serviceEdgeRouter',
      } as const;
      const policies = engine.policies[kind[change.entityType]];
      if (change.action === 'create') await policies.create(change.body);
      else if (change.action === 'patch') await policies.update(change.id, change.body, 'patch');
      else await policies.delete(change.id);
    }
  }
}

/** Everything the derivation keeps, read in full (the network is small): access, usable routes, posture links. */
async function network() {
  const access = await rows<{ i: string; s: string; dial: boolean; bind: boolean }>(
    'select identity_id as i, service_id as s, dial, bind from identity_services',
  );
  const routes = await rows<{ i: string; s: string; r: string }>(
    `select a.identity_id as i, a.service_id as s, ir.edge_router_id as r
       from identity_services a
       join identity_edge_routers ir on ir.identity_id = a.identity_id
       join service_edge_routers sr on sr.service_id = a.service_id and sr.edge_router_id = ir.edge_router_id`,
  );
  const posture = await rows<{ s: string; p: string; type: string; c: string }>(
    `select ps.service_id as s, p.name as p, ps.type, c.name as c
       from service_policy_services ps
       join service_policy_posture_checks pc on pc.policy_id = ps.policy_id
       join service_policies p on p.id = ps.policy_id
       join posture_checks c on c.id = pc.posture_check_id`,
  );
  return {
    access: new Map(access.map((a) => [`${a.s} ${a.i}`, a])),
    routes: new Set(routes.map((r) => `${r.s} ${r.i} ${r.r}`)),
    posture: new Set(posture.map((p) => `${p.s} ${p.c}|${p.p}|${p.type}`)),
  };
}

interface Expected {
  dialGained: string[];
  dialLost: string[];
  bindGained: string[];
  bindLost: string[];
  routers: Record<string, { gained: string[]; lost: string[] }>;
  started: string[];
  stopped: string[];
}
const emptyExpected = (): Expected => ({
  dialGained: [],
  dialLost: [],
  bindGained: [],
  bindLost: [],
  routers: {},
  started: [],
  stopped: [],
});

/** The difference of two full reads, per service (an independent computation: plain set differences). */
function expectedDiff(before: Awaited<ReturnType<typeof network>>, after: Awaited<ReturnType<typeof network>>) {
  const out: Record<string, Expected> = {};
  const of = (s: string) => (out[s] ??= emptyExpected());
  for (const key of new Set([...before.access.keys(), ...after.access.keys()])) {
    const [s, i] = key.split(' ') as [string, string];
    const b = before.access.get(key);
    const a = after.access.get(key);
    if ((b?.dial ?? false) !== (a?.dial ?? false)) of(s)[a?.dial ? 'dialGained' : 'dialLost'].push(i);
    if ((b?.bind ?? false) !== (a?.bind ?? false)) of(s)[a?.bind ? 'bindGained' : 'bindLost'].push(i);
  }
  const route = (key: string, side: 'gained' | 'lost') => {
    const [s, i, r] = key.split(' ') as [string, string, string];
    ((of(s).routers[i] ??= { gained: [], lost: [] })[side] as string[]).push(r);
  };
  for (const r of after.routes) if (!before.routes.has(r)) route(r, 'gained');
  for (const r of before.routes) if (!after.routes.has(r)) route(r, 'lost');
  for (const p of after.posture) if (!before.posture.has(p)) of(p.split(' ')[0]!).started.push(p.split(' ')[1]!);
  for (const p of before.posture) if (!after.posture.has(p)) of(p.split(' ')[0]!).stopped.push(p.split(' ')[1]!);
  return normalise(out);
}

function normalise(out: Record<string, Expected>) {
  for (const e of Object.values(out)) {
    for (const list of [e.dialGained, e.dialLost, e.bindGained, e.bindLost, e.started, e.stopped]) list.sort();
    for (const r of Object.values(e.routers)) {
      r.gained.sort();
      r.lost.sort();
    }
  }
  return out;
}

/** The what-if's answer in the same shape (ids; posture checks and policies by name). */
function answered(answer: WhatIfAnswer) {
  const out: Record<string, Expected> = {};
  for (const s of answer.services) {
    const e: Expected = {
      dialGained: s.dial.gained.map((i) => i.id),
      dialLost: s.dial.lost.map((i) => i.id),
      bindGained: s.bind.gained.map((i) => i.id),
      bindLost: s.bind.lost.map((i) => i.id),
      routers: Object.fromEntries(
        s.edgeRouters.identities.map((p) => [
          p.identity.id,
          { gained: p.gained.map((r) => r.id), lost: p.lost.map((r) => r.id) },
        ]),
      ),
      started: s.postureChecks.started.map((p) => `${p.postureCheck.name}|${p.policy.name}|${p.policyType}`),
      stopped: s.postureChecks.stopped.map((p) => `${p.postureCheck.name}|${p.policy.name}|${p.policyType}`),
    };
    out[s.service.id] = e;
  }
  return normalise(out);
}

/** A fingerprint of every table a change could write: the analysis must leave each as it was. */
async function fingerprint(): Promise<Record<string, string>> {
  const tables = [
    'outbox',
    'event_position',
    'identities',
    'services',
    'edge_routers',
    'service_policies',
    'edge_router_policies',
    'service_edge_router_policies',
    'posture_checks',
    'service_policy_identities',
    'service_policy_services',
    'service_policy_posture_checks',
    'edge_router_policy_identities',
    'edge_router_policy_edge_routers',
    'service_edge_router_policy_services',
    'service_edge_router_policy_edge_routers',
    'identity_service_updates',
  ];
  const out: Record<string, string> = {};
  for (const t of tables) {
    const [row] = await rows<{ h: string | null; n: number }>(
      `select md5(string_agg(x::text, ',' order by x::text)) as h, count(*)::int as n from ${t} x`,
    );
    out[t] = `${row!.n}:${row!.h}`;
  }
  return out;
}

/** The error an analysis is refused with. */
async function refusal(changes: Record<string, unknown>[]) {
  try {
    await engine.whatIf.analyse(proposedChangesOf(changes as never), 1000);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { code: err.code, cause: err.cause };
  }
  throw new Error('accepted');
}

describe('what-if on a generated network', () => {
  it(`equals the difference of applying the same changes for real (seed ${seed}, 60 proposals)`, async () => {
    let nonEmpty = 0;
    for (let round = 0; round < 60; round++) {
      named.clear();
      const raw = [await randomChange()];
      while (raw.length < 3 && chance(0.3)) raw.push(await randomChange());
      let changes: ProposedChange[];
      try {
        changes = proposedChangesOf(raw as never);
      } catch (err) {
        throw new Error(`${JSON.stringify(raw)}: ${JSON.stringify((err as ApiError).cause)}`);
      }
      const before = await network();
      const untouched = await fingerprint();
      const { result: answer, produced } = await trackProduced(() =>
        engine.whatIf.analyse(changes, Number.MAX_SAFE_INTEGER),
      );
      // Nothing left behind: no row, no event, no position for read-your-writes.
      expect(await fingerprint()).toEqual(untouched);
      expect(produced).toEqual({});
      expect(answer.truncated).toBe(false);
      for (const change of changes) await applyForReal(change);
      const after = await network();
      const expected = expectedDiff(before, after);
      expect(answered(answer), `round ${round}: ${JSON.stringify(raw)}`).toEqual(expected);
      expect(answer.summary.services).toBe(Object.keys(expected).length);
      if (answer.services.length > 0) nonEmpty++;
    }
    // The proposals made differences (not only no-ops).
    expect(nonEmpty).toBeGreaterThan(20);
  }, 300_000);

  it('sends no notification and no event: the next notification is a real change’s', async () => {
    const heard: string[] = [];
    const unlisten = await database.listen('ziti_outbox', (p) => void heard.push(p));
    try {
      const [policy] = await ids('service_policies');
      await engine.whatIf.analyse(
        proposedChangesOf([
          { action: 'patch', entityType: 'servicePolicies', id: policy!, body: { identityRoles: ['#all'] } },
        ]),
        10,
      );
      const outbox = await rows<{ n: number }>('select count(*)::int as n from outbox');
      await engine.policies.service.update(policy!, { tags: { touched: true } }, 'patch');
      // NOTIFYs arrive in commit order: had the analysis sent one, it would be heard first, or as well.
      const deadline = Date.now() + 10_000;
      while (heard.length === 0 && Date.now() < deadline) await new Promise((r) => setImmediate(r));
      expect(heard).toHaveLength(1);
      expect((await rows<{ n: number }>('select count(*)::int as n from outbox'))[0]!.n).toBe(outbox[0]!.n + 1);
    } finally {
      await unlisten();
    }
  });

  it('refuses what the real operations refuse, naming the change', async () => {
    // Domain rules of the real create: an @id role must name an existing entity.
    expect(
      await refusal([
        { action: 'patch', entityType: 'identities', id: 'wi-003', body: { roleAttributes: ['ia1'] } },
        {
          action: 'create',
          entityType: 'servicePolicies',
          body: { name: 'bad', type: 'Dial', semantic: 'AnyOf', identityRoles: ['@nobody'] },
        },
      ]),
    ).toEqual({
      code: 'COULD_NOT_VALIDATE',
      cause: {
        field: 'changes.1.body.identityRoles',
        reason: 'no identities found with the given ids',
        value: '[nobody]',
      },
    });
    // A name in use (one that is there now: the random rounds above delete policies whose ids are random).
    const [taken] = await rows<{ name: string }>('select name from service_policies order by name limit 1');
    expect(
      await refusal([
        {
          action: 'create',
          entityType: 'servicePolicies',
          body: { name: taken!.name, type: 'Dial', semantic: 'AnyOf' },
        },
      ]),
    ).toMatchObject({ code: 'COULD_NOT_VALIDATE', cause: { field: 'changes.0.body.name' } });
    expect(
      await refusal([{ action: 'patch', entityType: 'identities', id: 'wi-003', body: { roleAttributes: ['#hash'] } }]),
    ).toMatchObject({ cause: { field: 'changes.0.body.roleAttributes' } });
    // An unknown id: the real operation's not-found.
    let real: unknown;
    await engine.policies.edgeRouter.delete('nope').catch((err: unknown) => (real = err));
    expect(await refusal([{ action: 'delete', entityType: 'edgeRouterPolicies', id: 'nope' }])).toEqual({
      code: 'NOT_FOUND',
      cause: (real as ApiError).cause,
    });
    expect(
      await refusal([{ action: 'patch', entityType: 'identities', id: 'nope', body: { roleAttributes: [] } }]),
    ).toEqual({
      code: 'NOT_FOUND',
      cause: { code: 'UNHANDLED', message: 'identity with id nope not found' },
    });
    expect(
      await refusal([{ action: 'patch', entityType: 'edgeRouters', id: 'nope', body: { roleAttributes: [] } }]),
    ).toMatchObject({
      code: 'NOT_FOUND',
      cause: { message: 'edgeRouter with id nope not found' },
    });
  });

  it('answers a posture check deletion and a policy that changes type as the engine derives them', async () => {
    const check = await engine.postureChecks.create({ typeId: 'MFA', name: 'wi-mfa', roleAttributes: ['wi-mfa'] });
    const policy = await engine.policies.service.create({
      name: 'wi-posture',
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: ['@wi-010'],
      serviceRoles: ['@ws-10'],
      postureCheckRoles: [`@${check.id}`],
    });
    const answer = await engine.whatIf.analyse(
      proposedChangesOf([
        { action: 'patch', entityType: 'servicePolicies', id: policy.id, body: { type: 'Bind' } },
        { action: 'delete', entityType: 'postureChecks', id: check.id },
      ]),
      100,
    );
    const ws10 = answer.services.find((s) => s.service.id === 'ws-10')!;
    expect(ws10.postureChecks.stopped).toEqual([
      {
        postureCheck: { id: check.id, name: 'wi-mfa' },
        policy: { id: policy.id, name: 'wi-posture' },
        policyType: 'Dial',
      },
    ]);
    expect(ws10.postureChecks.started).toEqual([]);
    // Still there: nothing was applied.
    expect(await ids('posture_checks')).toContain(check.id);
  });
});

describe('what-if on any input', () => {
  it('answers or refuses with a 4xx, whatever the proposed bodies hold (never a 500, nothing left behind)', async () => {
    const { statusOf } = await import('@ziti/contracts');
    const fc = (await import('fast-check')).default;
    const fields = [
      'name',
      'type',
      'semantic',
      'identityRoles',
      'serviceRoles',
      'edgeRouterRoles',
      'postureCheckRoles',
      'typeId',
      'roleAttributes',
      'operatingSystems',
      'macAddresses',
      'domains',
      'process',
      'processes',
      'timeoutSeconds',
      'tags',
    ];
    const value = fc.oneof(
      fc.anything({ maxDepth: 2 }),
      fc.constantFrom('Dial', 'Bind', 'AnyOf', 'AllOf', 'MFA', 'OS', 'MAC', 'DOMAIN', 'PROCESS', 'PROCESS_MULTI'),
      fc.array(fc.constantFrom('#all', '#ia1', '@wi-001', '@ws-01', '@nope', 'bare', '#', '@', ''), { maxLength: 3 }),
    );
    /** A valid proposal of each kind, then up to three of its body's fields replaced by anything. */
    const valid: Record<string, unknown>[] = [
      { action: 'create', entityType: 'servicePolicies', body: { name: 'fz', type: 'Dial', semantic: 'AnyOf' } },
      { action: 'patch', entityType: 'servicePolicies', id: '', body: { identityRoles: ['#ia1'] } },
      { action: 'delete', entityType: 'servicePolicies', id: '' },
      { action: 'create', entityType: 'edgeRouterPolicies', body: { name: 'fz', semantic: 'AllOf' } },
      { action: 'patch', entityType: 'serviceEdgeRouterPolicies', id: '', body: { edgeRouterRoles: ['#all'] } },
      { action: 'create', entityType: 'postureChecks', body: { name: 'fz', typeId: 'MFA' } },
      { action: 'create', entityType: 'postureChecks', body: { name: 'fz', typeId: 'OS', operatingSystems: [] } },
      { action: 'patch', entityType: 'postureChecks', id: '', body: { typeId: 'MFA', roleAttributes: ['pa1'] } },
      { action: 'patch', entityType: 'identities', id: 'wi-001', body: { roleAttributes: ['ia2'] } },
      { action: 'patch', entityType: 'services', id: 'ws-01', body: { roleAttributes: [] } },
      { action: 'patch', entityType: 'edgeRouters', id: 'wr-01', body: { roleAttributes: ['ra1'] } },
    ];
    const existing = {
      servicePolicies: await ids('service_policies'),
      serviceEdgeRouterPolicies: await ids('service_edge_router_policies'),
      postureChecks: await ids('posture_checks'),
    };
    const change = fc
      .tuple(
        fc.nat(valid.length - 1),
        fc.nat(1000),
        fc.dictionary(fc.constantFrom(...fields), value, { maxKeys: 3 }),
        fc.boolean(),
      )
      .map(([which, n, replaced, mutate]) => {
        const base = structuredClone(valid[which]!) as { entityType: string; id?: string; body?: object };
        const pool = existing[base.entityType as keyof typeof existing];
        if (base.id === '' && pool) base.id = pool[n % pool.length];
        if (mutate && base.body) base.body = { ...base.body, ...replaced };
        return base;
      });
    const untouched = await fingerprint();
    let answered = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(change, { minLength: 1, maxLength: 3 }), async (raw) => {
        try {
          const changes = proposedChangesOf(JSON.parse(JSON.stringify(raw)) as never);
          await engine.whatIf.analyse(changes, 100);
          answered++;
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          const status = statusOf(err.code);
          if (status < 400 || status >= 500) throw err;
        }
      }),
      { numRuns: 300, seed },
    );
    expect(await fingerprint()).toEqual(untouched);
    expect(answered).toBeGreaterThan(30);
  }, 300_000);
});
