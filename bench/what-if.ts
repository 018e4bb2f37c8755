/**
 * `npm run bench -- what-if`: what-if analysis of policy changes (`POST /extensions/what-if`,
 * issue 24) on the policy benchmark's network (bench/policy.ts `generateNetwork`: 10,000
 * identities, 1,000 services, 200 edge routers, 2,000 policies; `BENCH_WHAT_IF_SCALE` scales every
 * count down) plus 20 posture checks, built through the management API.
 *
 * Then `BENCH_WHAT_IF_ROUNDS` (340) proposals one at a time, seeded (`BENCH_WHAT_IF_SEED`), cycling
 * through 17 kinds — create, patch and delete of each policy kind and of posture checks, new role
 * attributes for an identity, a service and an edge router, and three changes at once — with roles
 * drawn from the network's own attributes, so each proposal moves what a real change would. Every
 * answer must be a 200. Floor: the target itself, p99 ≤ 1 s; beside it, in the same run, a trivial
 * policy-owned request (`GET /service-policies?limit=1`) for the fixed cost of a round trip.
 * Also measured once: a `#all` × `#all` Dial policy, which spans 10 million pairs and is refused
 * as too wide to compare (400).
 *
 * Then, untimed, the answer is checked against the real thing (issue 24: "the what-if answer for
 * random changes on the benchmark network equals the diff of applying them"):
 * `BENCH_WHAT_IF_CHECKS` (24) more seeded proposals of the same 17 kinds (after ten Dial policies
 * gated by posture checks are added, so posture check proposals move something), each snapshotted,
 * answered, applied for real through the management API with the same bodies, waited for until
 * policy has applied it, and compared with the difference of policy's derived state before and
 * after (`verifyProposals`; `checks` in the result). Any mismatch is printed (bounded) and makes
 * the scenario fail (the result is recorded first).
 *
 * Loopback only; every loop is bounded. Results go to bench/results/<date>-what-if.json.
 */
import pg from 'pg';
import type { LocalCluster } from '../deploy/local-cluster.ts';
import { mulberry32 } from '../test/support/prng.ts';
import {
  type Answer,
  type ScenarioOptions,
  adminLogin,
  call,
  clusterRss,
  create,
  gitState,
  latencyStats,
  load1,
  machine,
  recordResult,
  withCluster,
} from './common.ts';
import { generateNetwork, reachModel, shapeFor } from './policy.ts';

/** Runs `fn` over `items` with at most `limit` in flight. */
async function inPool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

const kinds = [
  'servicePolicies.create',
  'servicePolicies.patch',
  'servicePolicies.delete',
  'edgeRouterPolicies.create',
  'edgeRouterPolicies.patch',
  'edgeRouterPolicies.delete',
  'serviceEdgeRouterPolicies.create',
  'serviceEdgeRouterPolicies.patch',
  'serviceEdgeRouterPolicies.delete',
  'postureChecks.create',
  'postureChecks.patch',
  'postureChecks.delete',
  'identities.patch',
  'services.patch',
  'edgeRouters.patch',
  'three at once',
  'servicePolicies.create with posture checks',
] as const;

/** The scenario's sizes; each defaults to its `BENCH_WHAT_IF_*` variable (the smoke test gives them). */
export interface WhatIfOptions extends ScenarioOptions {
  scale?: number;
  seed?: number;
  rounds?: number;
  checks?: number;
}

export async function benchWhatIf(options: WhatIfOptions = {}) {
  const scale = options.scale ?? Number(process.env.BENCH_WHAT_IF_SCALE ?? 1);
  const seed = options.seed ?? Number(process.env.BENCH_WHAT_IF_SEED ?? 1);
  const rounds = options.rounds ?? Number(process.env.BENCH_WHAT_IF_ROUNDS ?? 340);
  const checks = options.checks ?? Number(process.env.BENCH_WHAT_IF_CHECKS ?? 24);
  const settleMs = Number(process.env.BENCH_WHAT_IF_SETTLE_S ?? 60) * 1000;
  const concurrency = Number(process.env.BENCH_WHAT_IF_CONCURRENCY ?? 16);
  const buildDeadlineMs = Number(process.env.BENCH_WHAT_IF_BUILD_DEADLINE_S ?? 1800) * 1000;
  const targetP99Ms = 1000;
  if (!(scale > 0 && scale <= 1)) throw new Error('BENCH_WHAT_IF_SCALE must be in (0, 1]');
  const net = generateNetwork(shapeFor(scale), 1);
  const model = reachModel(net);
  const expectedLinks = net.identities.reduce((sum, i) => sum + model.reach(i.roleAttributes), 0);
  const shape = net.shape;
  const checkAttributes = 10;

  return withCluster(options.cluster, 'whatif', {}, async (cluster: LocalCluster) => {
    const db = new pg.Pool({ connectionString: cluster.databases.policy, max: 2 });
    try {
      const token = await adminLogin(cluster);
      const loads: Record<string, number> = { build: load1() };

      // Build, as bench/policy.ts does, plus posture checks.
      const ids: Record<string, string[]> = {};
      const buildStart = performance.now();
      const phase = async (path: string, items: object[]) => {
        const out: string[] = [];
        await inPool(items, concurrency, async (item) => void out.push(await create(cluster, token, `/${path}`, item)));
        ids[path] = out;
        console.log(`  ${path.padEnd(30)} ${String(items.length).padStart(6)}`);
      };
      await phase(
        'services',
        net.services.map((s) => ({ ...s, encryptionRequired: true })),
      );
      await phase('edge-routers', net.edgeRouters);
      await phase(
        'identities',
        net.identities.map((i) => ({ ...i, type: 'Default', isAdmin: false })),
      );
      await phase(
        'service-policies',
        net.servicePolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      );
      await phase(
        'edge-router-policies',
        net.edgeRouterPolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      );
      await phase(
        'service-edge-router-policies',
        net.serviceEdgeRouterPolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      );
      await phase(
        'posture-checks',
        Array.from({ length: 20 }, (_, i) => ({
          typeId: 'MFA',
          name: `pwc-${i}`,
          roleAttributes: [`pc${i % checkAttributes}`],
        })),
      );
      const deadline = Date.now() + buildDeadlineMs;
      // This network's entities and links only (by their names' prefixes): a shared cluster (the
      // smoke test's) holds other scenarios' too.
      const counts = async () =>
        (
          await db.query<{ i: number; s: number; r: number; is: number }>(
            `select (select count(*)::int from identities where not deleted and name like 'pid-%') as i,
                    (select count(*)::int from services where not deleted and name like 'psv-%') as s,
                    (select count(*)::int from edge_routers where not deleted and name like 'per-%') as r,
                    (select count(*)::int from identity_services
                      where identity_id in (select id from identities where name like 'pid-%')) as "is"`,
          )
        ).rows[0]!;
      let c = await counts();
      while (c.i < shape.identities || c.s < shape.services || c.r < shape.edgeRouters || c.is !== expectedLinks) {
        if (Date.now() > deadline) throw new Error(`policy never caught up: ${JSON.stringify(c)}`);
        await new Promise((r) => setTimeout(r, 200));
        c = await counts();
      }
      const buildSeconds = +((performance.now() - buildStart) / 1000).toFixed(1);
      console.log(
        `network built and derived in ${buildSeconds} s: ${shape.identities} identities, ${shape.services} services, ` +
          `${shape.edgeRouters} edge routers, ${net.servicePolicies.length + net.edgeRouterPolicies.length + net.serviceEdgeRouterPolicies.length} policies, ${c.is} identity→service links`,
      );

      // Proposals.
      let rnd = mulberry32(seed);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
      const attr = (prefix: string, n: number) => `${prefix}${Math.floor(rnd() * n)}`;
      const role = (prefix: string, n: number) => [`#${attr(prefix, n)}`];
      const identityRoles = () => role('ia', shape.identityAttributes);
      const serviceRoles = () => role('sa', shape.serviceAttributes);
      const routerRoles = () => role('ra', shape.edgeRouterAttributes);
      let made = 0;
      const name = () => `what-if-${seed}-${++made}`;
      const policy = (
        type: 'servicePolicies' | 'edgeRouterPolicies' | 'serviceEdgeRouterPolicies',
        withChecks = false,
      ) => {
        if (type === 'servicePolicies')
          return {
            name: name(),
            type: pick(['Dial', 'Dial', 'Bind']),
            semantic: 'AnyOf',
            identityRoles: identityRoles(),
            serviceRoles: serviceRoles(),
            ...(withChecks ? { postureCheckRoles: role('pc', checkAttributes) } : {}),
          };
        if (type === 'edgeRouterPolicies')
          return { name: name(), semantic: 'AnyOf', identityRoles: identityRoles(), edgeRouterRoles: routerRoles() };
        return { name: name(), semantic: 'AnyOf', serviceRoles: serviceRoles(), edgeRouterRoles: routerRoles() };
      };
      const patchOf = (type: keyof typeof collectionOf): Record<string, unknown> => {
        switch (type) {
          case 'servicePolicies':
            return pick([{ identityRoles: identityRoles() }, { serviceRoles: serviceRoles() }, { type: 'Bind' }]);
          case 'edgeRouterPolicies':
            return pick([{ identityRoles: identityRoles() }, { edgeRouterRoles: routerRoles() }]);
          case 'serviceEdgeRouterPolicies':
            return pick([{ serviceRoles: serviceRoles() }, { edgeRouterRoles: routerRoles() }]);
          case 'postureChecks':
            return { typeId: 'MFA', roleAttributes: [attr('pc', checkAttributes)] };
          case 'identities':
            return { roleAttributes: [attr('ia', shape.identityAttributes), attr('ia', shape.identityAttributes)] };
          case 'services':
            return { roleAttributes: [attr('sa', shape.serviceAttributes)] };
          case 'edgeRouters':
            return { roleAttributes: [attr('ra', shape.edgeRouterAttributes), attr('ra', shape.edgeRouterAttributes)] };
        }
      };
      const proposal = (kind: (typeof kinds)[number]): Record<string, unknown>[] => {
        if (kind === 'three at once')
          return [
            { action: 'create', entityType: 'servicePolicies', body: policy('servicePolicies') },
            { action: 'patch', entityType: 'identities', id: pick(ids.identities!), body: patchOf('identities') },
            {
              action: 'patch',
              entityType: 'edgeRouterPolicies',
              id: pick(ids['edge-router-policies']!),
              body: patchOf('edgeRouterPolicies'),
            },
          ];
        if (kind === 'servicePolicies.create with posture checks')
          return [{ action: 'create', entityType: 'servicePolicies', body: policy('servicePolicies', true) }];
        const [type, action] = kind.split('.') as [keyof typeof collectionOf, 'create' | 'patch' | 'delete'];
        if (action === 'create')
          return [
            {
              action,
              entityType: type,
              body:
                type === 'postureChecks'
                  ? { typeId: 'MFA', name: name(), roleAttributes: [attr('pc', checkAttributes)] }
                  : policy(type as 'servicePolicies'),
            },
          ];
        const id = pick(ids[collectionOf[type]]!);
        return [
          action === 'delete'
            ? { action, entityType: type, id }
            : { action, entityType: type, id, body: patchOf(type) },
        ];
      };

      const whatIf = (changes: unknown[], limit?: number) =>
        call(cluster, 'management', 'POST', '/extensions/what-if', token, {
          changes,
          ...(limit === undefined ? {} : { limit }),
        });
      console.log(`\nwhat-if: ${rounds} proposals one at a time (10 warm-up)`);
      for (let i = 0; i < 10; i++) await whatIf(proposal(kinds[i % kinds.length]!));
      loads.whatIf = load1();
      const all: number[] = [];
      const byKind = new Map<string, number[]>();
      const sizes = { services: 0, pairs: 0, routerPairs: 0, postureChecks: 0 };
      let errors = 0;
      for (let i = 0; i < rounds; i++) {
        const kind = kinds[i % kinds.length]!;
        const changes = proposal(kind);
        const t = performance.now();
        const r = await whatIf(changes);
        const ms = performance.now() - t;
        if (r.status !== 200) {
          errors++;
          console.log(`  ${kind}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
          continue;
        }
        all.push(ms);
        byKind.set(kind, [...(byKind.get(kind) ?? []), ms]);
        const s = r.json.data.summary;
        sizes.services += s.services;
        sizes.pairs += s.dialGained + s.dialLost + s.bindGained + s.bindLost;
        sizes.routerPairs += s.edgeRouterPairs;
        sizes.postureChecks += s.postureChecksStarted + s.postureChecksStopped;
      }
      const overall = latencyStats(all);
      const perKind = Object.fromEntries([...byKind].map(([k, xs]) => [k, latencyStats(xs)]));
      for (const [k, s] of Object.entries(perKind))
        console.log(`  ${k.padEnd(44)} p50 ${String(s.p50).padStart(8)} ms  p99 ${String(s.p99).padStart(8)} ms`);
      const mean = (x: number) => +(x / Math.max(1, all.length)).toFixed(1);
      console.log(
        `all ${overall.count}: p50 ${overall.p50} ms, p99 ${overall.p99} ms, max ${overall.max} ms; errors ${errors}; ` +
          `per answer on average ${mean(sizes.services)} services, ${mean(sizes.pairs)} Dial/Bind changes, ` +
          `${mean(sizes.routerPairs)} pairs with other routers, ${mean(sizes.postureChecks)} posture changes`,
      );

      // Beside it: the fixed cost of a policy-owned request.
      const trivial: number[] = [];
      for (let i = 0; i < 100; i++) {
        const t = performance.now();
        await call(cluster, 'management', 'GET', '/service-policies?limit=1', token);
        trivial.push(performance.now() - t);
      }
      const roundTrip = latencyStats(trivial);
      console.log(`GET /service-policies?limit=1, 100 one at a time: p50 ${roundTrip.p50} ms, p99 ${roundTrip.p99} ms`);

      // Once: a proposal too wide to compare.
      const t = performance.now();
      const wide = await whatIf([
        {
          action: 'create',
          entityType: 'servicePolicies',
          body: { name: name(), type: 'Dial', semantic: 'AnyOf', identityRoles: ['#all'], serviceRoles: ['#all'] },
        },
      ]);
      const wideMs = +(performance.now() - t).toFixed(1);
      console.log(
        `#all × #all Dial policy: ${wide.status} after ${wideMs} ms (${wide.json?.error?.cause?.reason ?? ''})`,
      );

      const met = errors === 0 && overall.p99 <= targetP99Ms;
      console.log(`target p99 ≤ ${targetP99Ms} ms: ${met ? 'met' : 'NOT met'}`);

      // Untimed: each answer against the difference of applying the same changes for real. Its
      // proposals come from a PRNG of their own, so they do not depend on the number of rounds.
      rnd = mulberry32(seed + 0x5eed);
      loads.checks = load1();
      // The network's service policies gate nothing: one Dial policy behind each posture attribute
      // (applied for real, not checked), so that posture check proposals move something too.
      if (checks > 0)
        for (let k = 0; k < checkAttributes; k++)
          ids['service-policies']!.push(
            await create(cluster, token, '/service-policies', {
              name: `what-if-${seed}-gated-${k}`,
              type: 'Dial',
              semantic: 'AnyOf',
              identityRoles: identityRoles(),
              serviceRoles: serviceRoles(),
              postureCheckRoles: [`#pc${k}`],
            }),
          );
      const verification = await verifyProposals(
        cluster,
        token,
        checks,
        settleMs,
        (i) => {
          const kind = kinds[i % kinds.length]!;
          return { kind, changes: proposal(kind) };
        },
        whatIf,
        ids,
      );
      const summary = {
        date: new Date().toISOString(),
        scenario: 'what-if',
        machine: machine(),
        source: gitState(),
        loadAverage: loads,
        scale,
        seed,
        shape,
        build: { seconds: buildSeconds, identityServiceLinks: c.is, postureChecks: 20 },
        rounds,
        errors,
        whatIf: overall,
        perKind,
        meanAnswer: {
          services: mean(sizes.services),
          dialBindChanges: mean(sizes.pairs),
          routerPairs: mean(sizes.routerPairs),
          postureChanges: mean(sizes.postureChecks),
        },
        floor: { targetP99Ms, trivialPolicyRequest: roundTrip },
        allPolicy: { status: wide.status, ms: wideMs },
        met,
        checks: verification,
        rssMiB: clusterRss(cluster),
      };
      await recordResult('what-if', summary, options.record ?? true);
      if (verification.mismatched > 0 || verification.errors > 0)
        throw new Error(
          `what-if: ${verification.mismatched} of ${verification.proposals} answers differ from applying them, ` +
            `${verification.errors} could not be checked`,
        );
      return summary;
    } finally {
      await db.end();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// The check: each answer against the difference of applying the same changes for real

/** A proposed change as the bench sends it (the what-if's and the real operation's body). */
interface Change {
  action: 'create' | 'patch' | 'delete';
  entityType: string;
  id?: string;
  body?: Record<string, unknown>;
}

/** The management collection of each entity type (the real operation's path). */
const collectionOf = {
  servicePolicies: 'service-policies',
  edgeRouterPolicies: 'edge-router-policies',
  serviceEdgeRouterPolicies: 'service-edge-router-policies',
  postureChecks: 'posture-checks',
  identities: 'identities',
  services: 'services',
  edgeRouters: 'edge-routers',
} as const;

/** policy's read model of each entity whose role attributes reach it through its owner's event. */
const readModelOf: Record<string, string> = {
  identities: 'identities',
  services: 'services',
  edgeRouters: 'edge_routers',
};

/** The most a what-if lists (`whatIfRequest.limit`); past it the answer is truncated, its counts complete. */
const answerLimit = 5000;
/** Rows of difference pulled into this process at most (a what-if reads ≤ 250,000 rows a state). */
const pullCap = 500_000;
/** Differing entries printed for a mismatch, at most, on each side. */
const shown = 20;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const setOf = (xs: unknown) => [...new Set((xs as string[] | null | undefined) ?? [])].sort();
const sameSet = (a: unknown, b: unknown) => JSON.stringify(setOf(a)) === JSON.stringify(setOf(b));

/**
 * What the derivation keeps, as `network()` in services/policy/src/what-if/what-if.int.test.ts
 * reads it, into temporary tables of this connection (one repeatable-read snapshot): access
 * (identity_services, Dial and Bind), usable routes (identity_edge_routers ⋈ service_edge_routers
 * per identity/service pair with access) and posture checks applying per service through a service
 * policy (by name: a created policy or check has another id in the what-if's sandbox than for real).
 */
async function snapshot(db: pg.Client, tag: 'before' | 'after'): Promise<void> {
  await db.query('begin isolation level repeatable read');
  try {
    await db.query(`drop table if exists wif_access_${tag}, wif_routes_${tag}, wif_posture_${tag}`);
    await db.query(
      `create temp table wif_access_${tag} as
         select identity_id as i, service_id as s, dial, bind from identity_services`,
    );
    await db.query(
      `create temp table wif_routes_${tag} as
         select a.i, a.s, ir.edge_router_id as r
           from wif_access_${tag} a
           join identity_edge_routers ir on ir.identity_id = a.i
           join service_edge_routers sr on sr.service_id = a.s and sr.edge_router_id = ir.edge_router_id`,
    );
    await db.query(
      `create temp table wif_posture_${tag} as
         select ps.service_id as s, c.name || '|' || p.name || '|' || ps.type as e
           from service_policy_services ps
           join service_policy_posture_checks pc on pc.policy_id = ps.policy_id
           join service_policies p on p.id = ps.policy_id
           join posture_checks c on c.id = pc.posture_check_id`,
    );
    await db.query('commit');
  } catch (err) {
    await db.query('rollback');
    throw err;
  }
}

interface DiffRow {
  k: 'dial+' | 'dial-' | 'bind+' | 'bind-' | 'router+' | 'router-' | 'posture+' | 'posture-';
  s: string;
  i: string | null;
  x: string | null;
}

/** The difference of the two snapshots, computed in Postgres (EXCEPT): only the rows that differ leave it. */
async function differences(db: pg.Client): Promise<DiffRow[] | undefined> {
  const access = (right: 'dial' | 'bind', from: string, to: string) =>
    `select s, i from wif_access_${to} where ${right} except select s, i from wif_access_${from} where ${right}`;
  const rows = await db.query<DiffRow>(
    `select 'dial+' as k, s, i, null as x from (${access('dial', 'before', 'after')}) d
     union all select 'dial-', s, i, null from (${access('dial', 'after', 'before')}) d
     union all select 'bind+', s, i, null from (${access('bind', 'before', 'after')}) d
     union all select 'bind-', s, i, null from (${access('bind', 'after', 'before')}) d
     union all select 'router+', s, i, r from
       (select s, i, r from wif_routes_after except select s, i, r from wif_routes_before) d
     union all select 'router-', s, i, r from
       (select s, i, r from wif_routes_before except select s, i, r from wif_routes_after) d
     union all select 'posture+', s, null, e from
       (select s, e from wif_posture_after except select s, e from wif_posture_before) d
     union all select 'posture-', s, null, e from
       (select s, e from wif_posture_before except select s, e from wif_posture_after) d
     limit ${pullCap + 1}`,
  );
  return rows.rows.length > pullCap ? undefined : rows.rows;
}

const entryOf = (r: DiffRow) =>
  r.k.startsWith('router') ? `${r.s} ${r.k} ${r.i} ${r.x}` : `${r.s} ${r.k} ${r.k.startsWith('posture') ? r.x : r.i}`;

type Counts = Record<string, number>;
const summaryKeys = [
  'services',
  'dialGained',
  'dialLost',
  'bindGained',
  'bindLost',
  'edgeRouterPairs',
  'edgeRoutersGained',
  'edgeRoutersLost',
  'postureChecksStarted',
  'postureChecksStopped',
] as const;

/**
 * The applied difference in the answer's terms: one entry per service that differs, per identity
 * gaining or losing Dial or Bind, per router a pair gains or loses, per posture entry (the int
 * test's normalisation, flattened), the summary's counts and each service's complete counts.
 */
function appliedOf(rows: DiffRow[]) {
  const entries = rows.map(entryOf);
  const services = new Set(rows.map((r) => r.s));
  for (const s of services) entries.push(`${s} service`);
  const n = (k: DiffRow['k']) => rows.filter((r) => r.k === k).length;
  const pairs = (s?: string) =>
    new Set(rows.filter((r) => r.k.startsWith('router') && (s === undefined || r.s === s)).map((r) => `${r.s} ${r.i}`))
      .size;
  const summary: Counts = {
    services: services.size,
    dialGained: n('dial+'),
    dialLost: n('dial-'),
    bindGained: n('bind+'),
    bindLost: n('bind-'),
    edgeRouterPairs: pairs(),
    edgeRoutersGained: n('router+'),
    edgeRoutersLost: n('router-'),
    postureChecksStarted: n('posture+'),
    postureChecksStopped: n('posture-'),
  };
  const perService = new Map<string, Counts>();
  for (const s of services) {
    const m = (k: DiffRow['k']) => rows.filter((r) => r.s === s && r.k === k).length;
    perService.set(s, {
      dialGained: m('dial+'),
      dialLost: m('dial-'),
      bindGained: m('bind+'),
      bindLost: m('bind-'),
      pairs: pairs(s),
      started: m('posture+'),
      stopped: m('posture-'),
    });
  }
  return { entries: entries.sort(), summary, perService };
}

interface Ref {
  id: string;
  name: string;
}
interface AnsweredService {
  id: string;
  dial: { gained: Ref[]; lost: Ref[]; gainedCount: number; lostCount: number };
  bind: { gained: Ref[]; lost: Ref[]; gainedCount: number; lostCount: number };
  edgeRouters: { pairs: number; identities: { identity: Ref; gained: Ref[]; lost: Ref[] }[] };
  postureChecks: {
    started: { postureCheck: Ref; policy: Ref; policyType: string }[];
    stopped: { postureCheck: Ref; policy: Ref; policyType: string }[];
    startedCount: number;
    stoppedCount: number;
  };
}
interface AnsweredData {
  summary: Counts;
  truncated: boolean;
  services: AnsweredService[];
}

/** The answer in the same terms (entries listed; counts as answered). */
function answeredOf(data: AnsweredData) {
  const entries: string[] = [];
  const perService = new Map<string, Counts>();
  const posture = (p: { postureCheck: Ref; policy: Ref; policyType: string }) =>
    `${p.postureCheck.name}|${p.policy.name}|${p.policyType}`;
  for (const s of data.services) {
    entries.push(`${s.id} service`);
    for (const x of s.dial.gained) entries.push(`${s.id} dial+ ${x.id}`);
    for (const x of s.dial.lost) entries.push(`${s.id} dial- ${x.id}`);
    for (const x of s.bind.gained) entries.push(`${s.id} bind+ ${x.id}`);
    for (const x of s.bind.lost) entries.push(`${s.id} bind- ${x.id}`);
    for (const p of s.edgeRouters.identities) {
      for (const r of p.gained) entries.push(`${s.id} router+ ${p.identity.id} ${r.id}`);
      for (const r of p.lost) entries.push(`${s.id} router- ${p.identity.id} ${r.id}`);
    }
    for (const p of s.postureChecks.started) entries.push(`${s.id} posture+ ${posture(p)}`);
    for (const p of s.postureChecks.stopped) entries.push(`${s.id} posture- ${posture(p)}`);
    perService.set(s.id, {
      dialGained: s.dial.gainedCount,
      dialLost: s.dial.lostCount,
      bindGained: s.bind.gainedCount,
      bindLost: s.bind.lostCount,
      pairs: s.edgeRouters.pairs,
      started: s.postureChecks.startedCount,
      stopped: s.postureChecks.stoppedCount,
    });
  }
  return { entries: entries.sort(), perService };
}

/**
 * How an answer differs from the applied difference (empty: it matches). Untruncated, its entries
 * must be exactly the applied ones; truncated (the lists stop at `answerLimit` entries), those it
 * lists must be among them. Either way every count — the summary's and each listed service's — must
 * equal the applied difference's.
 */
function compare(data: AnsweredData, changes: number, rows: DiffRow[]): string[] {
  const applied = appliedOf(rows);
  const answered = answeredOf(data);
  const problems: string[] = [];
  const bounded = (what: string, xs: string[]) => {
    if (xs.length === 0) return;
    problems.push(`${what} (${xs.length}):`);
    for (const x of xs.slice(0, shown)) problems.push(`    ${x}`);
    if (xs.length > shown) problems.push(`    … ${xs.length - shown} more`);
  };
  if (data.summary.changes !== changes) problems.push(`summary.changes ${data.summary.changes}, proposed ${changes}`);
  for (const k of summaryKeys)
    if (data.summary[k] !== applied.summary[k])
      problems.push(`summary.${k}: answered ${data.summary[k]}, applied ${applied.summary[k]}`);
  const duplicates = answered.entries.filter((e, i) => answered.entries[i - 1] === e);
  bounded('listed twice in the answer', duplicates);
  const appliedSet = new Set(applied.entries);
  const answeredSet = new Set(answered.entries);
  bounded(
    'in the answer, not applied',
    [...answeredSet].filter((e) => !appliedSet.has(e)),
  );
  if (!data.truncated)
    bounded(
      'applied, not in the answer',
      [...appliedSet].filter((e) => !answeredSet.has(e)),
    );
  for (const [s, counts] of answered.perService) {
    const want = applied.perService.get(s);
    if (want && JSON.stringify(counts) !== JSON.stringify(want))
      problems.push(`service ${s} counts: answered ${JSON.stringify(counts)}, applied ${JSON.stringify(want)}`);
  }
  return problems;
}

/**
 * Applies a proposal for real through the management API, with the same bodies, in order, then
 * waits (bounded) until policy has applied it. Policy's own changes (policies, posture checks) are
 * derived in the request's transaction. An identity's, a service's or an edge router's attributes
 * reach policy through its owner's event (auth, inventory), whose handler updates the read model row
 * and derives its links again in one transaction: once the row shows the new attributes at a newer
 * source position, the derived rows have settled with it. Returns the real operations' refusals.
 */
async function applyForReal(
  cluster: LocalCluster,
  token: string,
  db: pg.Client,
  changes: Change[],
  ids: Record<string, string[]>,
  settleMs: number,
): Promise<string[]> {
  const refusals: string[] = [];
  const row = async (table: string, id: string) =>
    (
      await db.query<{ attrs: string[]; seq: string }>(
        `select role_attributes as attrs, source_sequence::text as seq from ${table} where id = $1`,
        [id],
      )
    ).rows[0];
  const watched = new Map<
    string,
    { table: string; id: string; before: { attrs: string[]; seq: string }; wanted: unknown }
  >();
  for (const [index, c] of changes.entries()) {
    const collection = (collectionOf as Record<string, string>)[c.entityType]!;
    const table = readModelOf[c.entityType];
    const key = `${table} ${c.id}`;
    if (table && !watched.has(key)) {
      const before = await row(table, c.id!);
      if (!before) throw new Error(`${c.entityType} ${c.id} is not in policy's read model`);
      watched.set(key, { table, id: c.id!, before, wanted: before.attrs });
    }
    const [method, path] =
      c.action === 'create'
        ? ['POST', `/${collection}`]
        : [c.action === 'patch' ? 'PATCH' : 'DELETE', `/${collection}/${c.id}`];
    const r: Answer = await call(cluster, 'management', method, path, token, c.body);
    if (r.status >= 300) {
      refusals.push(
        `change ${index}: the real ${method} ${path} answered ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`,
      );
      continue;
    }
    if (c.action === 'create') ids[collection]!.push(r.json.data.id as string);
    if (c.action === 'delete') ids[collection] = ids[collection]!.filter((id) => id !== c.id);
    if (table) watched.get(key)!.wanted = c.body?.roleAttributes;
  }
  for (const w of watched.values()) {
    const deadline = Date.now() + settleMs;
    for (;;) {
      const now = await row(w.table, w.id);
      if (
        now &&
        sameSet(now.attrs, w.wanted) &&
        (BigInt(now.seq) > BigInt(w.before.seq) || sameSet(w.before.attrs, w.wanted))
      )
        break;
      if (Date.now() > deadline)
        throw new Error(
          `policy did not apply the new role attributes of ${w.table} ${w.id} within ${settleMs / 1000} s: ` +
            `${JSON.stringify(now)}, wanted ${JSON.stringify(setOf(w.wanted))}`,
        );
      await sleep(25);
    }
  }
  return refusals;
}

/**
 * `count` proposals (`next`), one at a time: snapshot policy's derived state, ask the what-if
 * (`answerLimit`), apply the same changes for real, wait until policy has applied them, snapshot
 * again and compare the answer with the difference. A proposal the what-if refuses as too wide to
 * compare (400 on `changes`) is not applied, only counted. Stops at the first proposal that could
 * not be checked (an error, counted).
 */
async function verifyProposals(
  cluster: LocalCluster,
  token: string,
  count: number,
  settleMs: number,
  next: (i: number) => { kind: string; changes: Record<string, unknown>[] },
  whatIf: (changes: unknown[], limit?: number) => Promise<Answer>,
  ids: Record<string, string[]>,
) {
  const out = {
    proposals: count,
    matched: 0,
    /** Of the matched: answers truncated at `answerLimit`, matched by counts and the entries listed. */
    matchedTruncated: 0,
    mismatched: 0,
    refusedTooWide: 0,
    errors: 0,
    /** Answers with at least one service that differs (the proposals were not all no-ops). */
    withDifference: 0,
    /** Entries (service, identity, router, posture) of the applied differences, in all. */
    appliedEntries: 0,
    answerLimit,
    byKind: {} as Record<string, { checked: number; matched: number; truncated: number; refused: number }>,
    seconds: 0,
    ms: {} as Record<string, ReturnType<typeof latencyStats>>,
    firstMismatch: undefined as undefined | { index: number; kind: string; changes: unknown; problems: string[] },
    firstError: undefined as undefined | string,
  };
  if (count <= 0) return out;
  console.log(`\ncheck: ${count} proposals, each answered, applied for real and compared with the difference`);
  const times = { snapshot: [] as number[], whatIf: [] as number[], apply: [] as number[], difference: [] as number[] };
  const db = new pg.Client({ connectionString: cluster.databases.policy });
  await db.connect();
  const started = performance.now();
  try {
    for (let i = 0; i < count; i++) {
      const { kind, changes } = next(i);
      const k = (out.byKind[kind] ??= { checked: 0, matched: 0, truncated: 0, refused: 0 });
      try {
        let t = performance.now();
        await snapshot(db, 'before');
        times.snapshot.push(performance.now() - t);
        t = performance.now();
        const r = await whatIf(changes, answerLimit);
        times.whatIf.push(performance.now() - t);
        if (r.status === 400 && r.json?.error?.cause?.field === 'changes') {
          out.refusedTooWide++;
          k.refused++;
          console.log(`  ${String(i + 1).padStart(3)} ${kind.padEnd(44)} refused as too wide: not applied`);
          continue;
        }
        if (r.status !== 200) throw new Error(`what-if answered ${r.status} ${JSON.stringify(r.json).slice(0, 500)}`);
        const data = r.json.data as AnsweredData;
        t = performance.now();
        const refusals = await applyForReal(cluster, token, db, changes as unknown as Change[], ids, settleMs);
        times.apply.push(performance.now() - t);
        t = performance.now();
        await snapshot(db, 'after');
        const rows = await differences(db);
        times.difference.push(performance.now() - t);
        if (!rows) throw new Error(`the applied difference has more than ${pullCap} rows`);
        const problems = [...refusals, ...compare(data, changes.length, rows)];
        k.checked++;
        out.appliedEntries += rows.length;
        if (data.services.length > 0) out.withDifference++;
        const size = `${data.summary.services} services, ${rows.length} entries applied`;
        if (problems.length === 0) {
          out.matched++;
          k.matched++;
          if (data.truncated) {
            out.matchedTruncated++;
            k.truncated++;
          }
          console.log(
            `  ${String(i + 1).padStart(3)} ${kind.padEnd(44)} matches (${size}${data.truncated ? ', answer truncated: counts and listed entries' : ''})`,
          );
        } else {
          out.mismatched++;
          console.log(`  ${String(i + 1).padStart(3)} ${kind.padEnd(44)} MISMATCH (${size})`);
          if (!out.firstMismatch) {
            out.firstMismatch = { index: i, kind, changes, problems };
            console.log(`      proposal: ${JSON.stringify(changes).slice(0, 2000)}`);
            for (const p of problems.slice(0, 4 * shown)) console.log(`      ${p}`);
          }
        }
      } catch (err) {
        out.errors++;
        out.firstError = `${kind}: ${(err as Error).message}`;
        console.log(`  ${String(i + 1).padStart(3)} ${kind.padEnd(44)} ERROR ${out.firstError}; checking stops`);
        break;
      }
    }
  } finally {
    await db.end().catch(() => undefined);
  }
  out.seconds = +((performance.now() - started) / 1000).toFixed(1);
  out.ms = Object.fromEntries(Object.entries(times).map(([k, xs]) => [k, latencyStats(xs)]));
  console.log(
    `check: ${out.matched} of ${count} match (${out.matchedTruncated} of them truncated, by counts and listed entries), ` +
      `${out.mismatched} mismatched, ${out.refusedTooWide} refused as too wide, ${out.errors} errors; ` +
      `${out.withDifference} made a difference, ${out.appliedEntries} entries applied in all; ${out.seconds} s ` +
      `(per proposal p50: snapshot ${out.ms.snapshot?.p50} ms, what-if ${out.ms.whatIf?.p50} ms, ` +
      `apply ${out.ms.apply?.p50} ms, snapshot + difference ${out.ms.difference?.p50} ms)`,
  );
  return out;
}
