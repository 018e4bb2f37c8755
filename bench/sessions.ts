/**
 * `npm run bench -- sessions`: edge session creation (issue 11). 50 identities, each logged in once,
 * create new Dial sessions (one per API session and service: `BENCH_SESSION_SERVICES` services, 400
 * by default) at 50 connections through the gateway (autocannon, each request a new pair; the count
 * of sessions is checked afterwards) — visibility, type, posture and a shared edge
 * router checked for each — beside the same number of Postgres inserts of the same row shape (with
 * the same unique index) at 50 connections in the same run; then the idempotent repeat (every
 * request again: the existing session is answered). Loopback only; bounded in count.
 * Results go to bench/results/<date>-sessions.json and are summarised in docs/BENCHMARKS.md.
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import pg from 'pg';
import type { LocalCluster } from '../deploy/local-cluster.ts';
import {
  type ScenarioOptions,
  adminLogin,
  call,
  cpuBetween,
  cpuSnapshot,
  create as createIn,
  formatCpu,
  load1,
  login,
  machine,
  pct,
  recordResult,
  withCluster,
} from './common.ts';

interface Timing {
  name: string;
  operations: number;
  perSecond: number;
  p50: number;
  p99: number;
  errors: number;
}

/** Runs `count` operations on `workers` concurrent workers; each worker takes the next index. */
async function timed(
  name: string,
  count: number,
  workers: number,
  op: (i: number) => Promise<boolean>,
): Promise<Timing> {
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        if (!(await op(i))) errors++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const r = {
    name,
    operations: count,
    perSecond: Math.round(count / seconds),
    p50: +pct(latencies, 50).toFixed(2),
    p99: +pct(latencies, 99).toFixed(2),
    errors,
  };
  console.log(
    `${name.padEnd(44)} ${String(r.perSecond).padStart(6)} /s  p50 ${r.p50} ms  p99 ${r.p99} ms  errors ${r.errors}`,
  );
  return r;
}

export async function benchSessions(
  options: ScenarioOptions & { identities?: number; services?: number; connections?: number } = {},
) {
  const identities = options.identities ?? 50;
  const connections = options.connections ?? 50;
  const services = options.services ?? Number(process.env.BENCH_SESSION_SERVICES ?? 400);
  const env: Record<string, string> = process.env.DATABASE_POOL_SIZE
    ? { DATABASE_POOL_SIZE: process.env.DATABASE_POOL_SIZE }
    : {};
  return withCluster(options.cluster, 's', env, (cluster) =>
    run(cluster, { identities, connections, services, record: options.record ?? true }),
  );
}

async function run(
  cluster: LocalCluster,
  o: { identities: number; connections: number; services: number; record: boolean },
) {
  const { identities, connections, services } = o;
  // Names of this run: a cluster shared with other scenarios (the smoke test) keeps them apart.
  const tag = `bench-s-${Date.now().toString(36)}`;
  const floorDb = new pg.Pool({
    connectionString: process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    max: connections,
  });
  const floorTable = `bench_sessions_${Date.now().toString(36)}`;
  try {
    const adminToken = await adminLogin(cluster);
    const create = (path: string, body: unknown) => createIn(cluster, adminToken, path, body);

    const router = await create('/edge-routers', { name: `${tag}-router`, roleAttributes: [tag] });
    const serviceIds: string[] = [];
    for (let i = 0; i < services; i++)
      serviceIds.push(
        await create('/services', { name: `${tag}-svc-${i}`, encryptionRequired: true, roleAttributes: [tag] }),
      );
    await create('/service-policies', {
      name: `${tag}-dial`,
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`#${tag}`],
      serviceRoles: [`#${tag}`],
    });
    await create('/edge-router-policies', {
      name: `${tag}-erp`,
      semantic: 'AnyOf',
      identityRoles: [`#${tag}`],
      edgeRouterRoles: [`@${router}`],
    });
    await create('/service-edge-router-policies', {
      name: `${tag}-serp`,
      semantic: 'AnyOf',
      serviceRoles: [`#${tag}`],
      edgeRouterRoles: [`@${router}`],
    });
    const tokens: string[] = [];
    for (let i = 0; i < identities; i++) {
      const id = await create('/identities', {
        name: `${tag}-user-${i}`,
        type: 'User',
        isAdmin: false,
        roleAttributes: [tag],
      });
      const password = `pw-${randomUUID()}`;
      await create('/authenticators', { method: 'updb', identityId: id, username: `${tag}-user-${i}`, password });
      tokens.push(await login(cluster, `${tag}-user-${i}`, password));
    }
    // Every identity's view converged: its last service is dialable.
    const deadline = Date.now() + 60_000;
    for (const token of tokens) {
      while ((await call(cluster, 'client', 'GET', `/services/${serviceIds.at(-1)}`, token)).status !== 200) {
        if (Date.now() > deadline) throw new Error('the policy view did not converge');
        await new Promise((r) => setTimeout(r, 50));
      }
    }

    const count = identities * services;
    // Request i: identity i % 50, service ⌊i / 50⌋: every request a new (API session, service) pair.
    const cpu: Record<string, ReturnType<typeof cpuBetween>> = {};
    // Every request's head and body made before the run: the load generator shares the two cores
    // with the cluster, so its own work per request is kept to handing over a prepared object.
    const prepared = Array.from({ length: count }, (_, i) => ({
      method: 'POST' as const,
      path: '/edge/client/v1/sessions',
      headers: { 'content-type': 'application/json', 'zt-session': tokens[i % identities]! },
      body: JSON.stringify({ serviceId: serviceIds[Math.floor(i / identities)], type: 'Dial' }),
    }));
    const dialRun = async (name: string): Promise<Timing> => {
      let next = 0;
      const before = cpuSnapshot(cluster);
      const r = await autocannon({
        url: cluster.baseUrl,
        connections,
        amount: count,
        // autocannon notices that `amount` is done on its sampling tick: at the default 1 s, a run's
        // duration is rounded up to the next whole second (20,000 sessions in 7.1 s counted as 8.02 s).
        sampleInt: 10,
        requests: [
          {
            method: 'POST',
            path: '/edge/client/v1/sessions',
            setupRequest: () => prepared[next++ % count]!,
          },
        ],
      });
      const t = {
        name,
        operations: r.requests.total,
        perSecond: Math.round(r.requests.total / (r.duration || 1)),
        p50: r.latency.p50,
        p99: r.latency.p99,
        errors: r.errors + r.non2xx,
      };
      cpu[name] = cpuBetween(before, cpuSnapshot(cluster), r.requests.total);
      console.log(
        `${name.padEnd(44)} ${String(t.perSecond).padStart(6)} /s  p50 ${t.p50} ms  p99 ${t.p99} ms  errors ${t.errors}`,
      );
      console.log(`  CPU: ${formatCpu(cpu[name]!)}`);
      return t;
    };
    const sessionCount = async () =>
      Number(
        (await call(cluster, 'management', 'GET', '/sessions?limit=1', adminToken)).json.meta.pagination.totalCount,
      );
    const sessionsBefore = await sessionCount();
    const created = await dialRun('POST /sessions (new dial session)');
    const sessionsMade = (await sessionCount()) - sessionsBefore;
    if (sessionsMade !== count) throw new Error(`expected ${count} sessions, found ${sessionsMade}`);
    const repeated = await dialRun('POST /sessions (idempotent repeat)');

    await floorDb.query(`create table ${floorTable} (
      id text primary key, token text not null unique, api_session_id text not null, identity_id text not null,
      service_id text not null, type text not null, tags jsonb not null default '{}',
      created_at timestamptz not null, updated_at timestamptz not null)`);
    await floorDb.query(`create unique index on ${floorTable} (api_session_id, service_id, type)`);
    // The floor's 50 connections are open before it is timed, as the cluster's pools are.
    for (const c of await Promise.all(Array.from({ length: connections }, () => floorDb.connect()))) c.release();
    const floor = await timed('floor: Postgres insert of the same row', count, connections, async (i) => {
      await floorDb.query(
        `insert into ${floorTable} (id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at)
         values ($1, $2, $3, $4, $5, 'Dial', '{}'::jsonb, now(), now())`,
        [
          randomUUID(),
          randomUUID(),
          `as-${i % identities}`,
          `id-${i % identities}`,
          `svc-${Math.floor(i / identities)}`,
        ],
      );
      return true;
    });
    const summary = {
      date: new Date().toISOString(),
      scenario: 'sessions',
      machine: machine(),
      identities,
      services,
      connections,
      loadAverage1m: load1(),
      results: [created, repeated, floor],
      cpuPerScenario: cpu,
      ratios: {
        newSessionsVsInsert: +(created.perSecond / floor.perSecond).toFixed(3),
        repeatVsInsert: +(repeated.perSecond / floor.perSecond).toFixed(3),
      },
    };
    console.log(
      `\nnew sessions: ${(summary.ratios.newSessionsVsInsert * 100).toFixed(1)}% of the insert floor; idempotent repeat ${(summary.ratios.repeatVsInsert * 100).toFixed(1)}%`,
    );
    await recordResult('sessions', summary, o.record);
    return summary;
  } finally {
    await floorDb.query(`drop table if exists ${floorTable}`).catch(() => undefined);
    await floorDb.end();
  }
}
