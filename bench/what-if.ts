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
 * Loopback only; every loop is bounded. Results go to bench/results/<date>-what-if.json.
 */
import pg from 'pg';
import type { LocalCluster } from '../deploy/local-cluster.ts';
import {
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

/** mulberry32, as bench/policy.ts: the same proposals every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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

export async function benchWhatIf(options: ScenarioOptions = {}) {
  const scale = Number(process.env.BENCH_WHAT_IF_SCALE ?? 1);
  const seed = Number(process.env.BENCH_WHAT_IF_SEED ?? 1);
  const rounds = Number(process.env.BENCH_WHAT_IF_ROUNDS ?? 340);
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
      const counts = async () =>
        (
          await db.query<{ i: number; s: number; r: number; is: number }>(
            `select (select count(*)::int from identities where not deleted) as i,
                    (select count(*)::int from services where not deleted) as s,
                    (select count(*)::int from edge_routers where not deleted) as r,
                    (select count(*)::int from identity_services) as "is"`,
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
      const rnd = prng(seed);
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
      const collection = {
        servicePolicies: 'service-policies',
        edgeRouterPolicies: 'edge-router-policies',
        serviceEdgeRouterPolicies: 'service-edge-router-policies',
        postureChecks: 'posture-checks',
        identities: 'identities',
        services: 'services',
        edgeRouters: 'edge-routers',
      } as const;
      const patchOf = (type: keyof typeof collection): Record<string, unknown> => {
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
        const [type, action] = kind.split('.') as [keyof typeof collection, 'create' | 'patch' | 'delete'];
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
        const id = pick(ids[collection[type]]!);
        return [
          action === 'delete'
            ? { action, entityType: type, id }
            : { action, entityType: type, id, body: patchOf(type) },
        ];
      };

      const whatIf = (changes: unknown[]) =>
        call(cluster, 'management', 'POST', '/extensions/what-if', token, { changes });
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
        rssMiB: clusterRss(cluster),
      };
      await recordResult('what-if', summary, options.record ?? true);
      return summary;
    } finally {
      await db.end();
    }
  });
}
