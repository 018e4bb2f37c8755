/**
 * `npm run bench -- policy`: the policy engine on a generated network (issue 10). By default 10,000
 * identities, 1,000 services, 200 edge routers and 2,000 policies (1,200 service policies Dial/Bind,
 * 400 edge-router policies, 400 service-edge-router policies), role attributes drawn from a seeded
 * PRNG so that an identity reaches ~50 services; `BENCH_POLICY_SCALE` (default 1) scales every
 * count down for a quick try. The network is built through the management API with
 * `BENCH_POLICY_CONCURRENCY` (16) requests in flight, then, each beside its floor in the same run:
 *
 * (a) one identity's service list (client `GET /services?limit=100` as that identity; management
 *     `GET /identities/{id}/services?limit=100` as the admin while the client list answers 501)
 *     with autocannon, beside the page and count SQL on the policy database's link table via `pg`;
 * (b) attribute change (`PATCH /identities/{id}`) → changed service list visible, polled by another
 *     session, and the same session's first read right after the write (read-your-writes);
 * (c) one `#all` service policy → its effect visible for one identity.
 *
 * Loopback only; every loop is bounded in count and time. Results go to
 * bench/results/<date>-policy.json (`BENCH_RESULTS_DIR`; ignored by git) and are summarised in
 * docs/BENCHMARKS.md by hand.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { startLocalCluster } from '../deploy/local-cluster.ts';
import { mulberry32 } from '../test/support/prng.ts';
import { resultPath } from './common.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const api = '/edge/management/v1';
const clientApi = '/edge/client/v1';

export interface NetworkShape {
  identities: number;
  services: number;
  edgeRouters: number;
  servicePolicies: number;
  edgeRouterPolicies: number;
  serviceEdgeRouterPolicies: number;
  identityAttributes: number;
  serviceAttributes: number;
  edgeRouterAttributes: number;
}

export function shapeFor(scale: number): NetworkShape {
  const n = (x: number, min = 1) => Math.max(min, Math.round(x * scale));
  return {
    identities: n(10_000),
    services: n(1_000),
    edgeRouters: n(200),
    servicePolicies: n(1_200),
    edgeRouterPolicies: n(400),
    serviceEdgeRouterPolicies: n(400),
    // Each identity holds 2 identity attributes, each service 1 service attribute, each service
    // policy one `#` role of each: a policy selects ~43 identities and ~10 services, an identity is
    // selected by ~5.2 policies, so it reaches ~50 services (mean 50.7, p50 49 for seed 1 at scale 1;
    // `reachModel` gives the exact figures and the run prints them).
    identityAttributes: n(460, 4),
    serviceAttributes: n(100, 4),
    edgeRouterAttributes: n(40, 4),
  };
}

interface Entity {
  name: string;
  roleAttributes: string[];
}
interface Policy {
  name: string;
  type?: 'Dial' | 'Bind';
  identityRoles?: string[];
  serviceRoles?: string[];
  edgeRouterRoles?: string[];
}
export interface Network {
  shape: NetworkShape;
  identities: Entity[];
  services: Entity[];
  edgeRouters: Entity[];
  servicePolicies: Policy[];
  edgeRouterPolicies: Policy[];
  serviceEdgeRouterPolicies: Policy[];
}

export function generateNetwork(shape: NetworkShape, seed: number): Network {
  const rnd = mulberry32(seed);
  const pick = (n: number) => Math.floor(rnd() * n);
  const distinct = (count: number, pool: number, prefix: string) => {
    const out = new Set<string>();
    while (out.size < Math.min(count, pool)) out.add(`${prefix}${pick(pool)}`);
    return [...out].sort();
  };
  const entities = (count: number, prefix: string, attrs: number, pool: number, attrPrefix: string) =>
    Array.from({ length: count }, (_, i) => ({
      name: `${prefix}-${String(i).padStart(5, '0')}`,
      roleAttributes: distinct(attrs, pool, attrPrefix),
    }));
  const s = shape;
  return {
    shape,
    identities: entities(s.identities, 'pid', 2, s.identityAttributes, 'ia'),
    services: entities(s.services, 'psv', 1, s.serviceAttributes, 'sa'),
    edgeRouters: entities(s.edgeRouters, 'per', 2, s.edgeRouterAttributes, 'ra'),
    servicePolicies: Array.from({ length: s.servicePolicies }, (_, i) => ({
      name: `psp-${String(i).padStart(5, '0')}`,
      type: i % 6 === 5 ? 'Bind' : 'Dial',
      identityRoles: [`#ia${pick(s.identityAttributes)}`],
      serviceRoles: [`#sa${pick(s.serviceAttributes)}`],
    })),
    edgeRouterPolicies: Array.from({ length: s.edgeRouterPolicies }, (_, i) => ({
      name: `perp-${String(i).padStart(5, '0')}`,
      identityRoles: [`#ia${pick(s.identityAttributes)}`],
      edgeRouterRoles: [`#ra${pick(s.edgeRouterAttributes)}`],
    })),
    serviceEdgeRouterPolicies: Array.from({ length: s.serviceEdgeRouterPolicies }, (_, i) => ({
      name: `pserp-${String(i).padStart(5, '0')}`,
      serviceRoles: [`#sa${pick(s.serviceAttributes)}`],
      edgeRouterRoles: [`#ra${pick(s.edgeRouterAttributes)}`],
    })),
  };
}

/** What the policy engine should derive (AnyOf, `#attr` roles only): services reached per attribute set. */
export function reachModel(net: Network) {
  const servicesByAttr = new Map<string, Set<number>>();
  net.services.forEach((s, i) => {
    for (const a of s.roleAttributes) {
      if (!servicesByAttr.has(a)) servicesByAttr.set(a, new Set());
      servicesByAttr.get(a)!.add(i);
    }
  });
  const policiesByIdentityAttr = new Map<string, Policy[]>();
  for (const p of net.servicePolicies)
    for (const r of p.identityRoles!) {
      const a = r.slice(1);
      if (!policiesByIdentityAttr.has(a)) policiesByIdentityAttr.set(a, []);
      policiesByIdentityAttr.get(a)!.push(p);
    }
  const reach = (attrs: string[]) => {
    const out = new Set<number>();
    for (const a of attrs)
      for (const p of policiesByIdentityAttr.get(a) ?? [])
        for (const r of p.serviceRoles!) for (const s of servicesByAttr.get(r.slice(1)) ?? []) out.add(s);
    return out.size;
  };
  return { reach, identityAttributes: [...policiesByIdentityAttr.keys()] };
}

/** Percentile of sorted numbers. */
function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2);
}
const stat = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return { n: s.length, p50: pct(s, 50), p99: pct(s, 99), max: pct(s, 100) };
};

/** Runs `fn` over `items` with at most `limit` in flight. */
async function inPool<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

/** VmRSS (MiB) of a process, from /proc. */
function rssMiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** The commit measured and the uncommitted changes in the tree (the services run from the work tree). */
function sourceState() {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  try {
    const changed = git('status', '--porcelain', '--', 'services', 'packages', 'deploy').split('\n').filter(Boolean);
    return { commit: git('rev-parse', 'HEAD'), uncommittedServiceAndPackageFiles: changed.length };
  } catch {
    return undefined;
  }
}

export async function benchPolicy() {
  const scale = Number(process.env.BENCH_POLICY_SCALE ?? 1);
  const seed = Number(process.env.BENCH_POLICY_SEED ?? 1);
  const concurrency = Number(process.env.BENCH_POLICY_CONCURRENCY ?? 16);
  const rounds = Number(process.env.BENCH_POLICY_ROUNDS ?? 50);
  const connections = Number(process.env.BENCH_POLICY_CONNECTIONS ?? 4);
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const buildDeadlineMs = Number(process.env.BENCH_POLICY_BUILD_DEADLINE_S ?? 1800) * 1000;
  const allDeadlineMs = Number(process.env.BENCH_POLICY_ALL_DEADLINE_S ?? 600) * 1000;
  const pollDeadlineMs = 10_000;
  if (!(scale > 0 && scale <= 1)) throw new Error('BENCH_POLICY_SCALE must be in (0, 1]');

  const net = generateNetwork(shapeFor(scale), seed);
  const model = reachModel(net);
  const reaches = net.identities.map((i) => model.reach(i.roleAttributes));
  const expectedLinks = reaches.reduce((a, b) => a + b, 0);
  const reachStat = stat(reaches);
  // The measured identity: the first one reaching closest to 50 services.
  const target = Math.min(50, net.shape.services);
  let subject = 0;
  for (let i = 0; i < reaches.length; i++)
    if (Math.abs(reaches[i]! - target) < Math.abs(reaches[subject]! - target)) subject = i;
  const subjectAttrs = net.identities[subject]!.roleAttributes;
  const subjectReach = reaches[subject]!;
  // The attribute (b) toggles: the one that adds the fewest services (at least one) to the subject.
  let toggle = '';
  let toggledReach = Infinity;
  for (const a of model.identityAttributes) {
    if (subjectAttrs.includes(a)) continue;
    const r = model.reach([...subjectAttrs, a]);
    if (r > subjectReach && r < toggledReach) [toggle, toggledReach] = [a, r];
  }
  if (!toggle) throw new Error('no attribute changes the subject identity’s services');
  console.log(
    `policy network (scale ${scale}, seed ${seed}): ${net.identities.length} identities, ${net.services.length} services, ${net.edgeRouters.length} edge routers, ` +
      `${net.servicePolicies.length + net.edgeRouterPolicies.length + net.serviceEdgeRouterPolicies.length} policies; ` +
      `services per identity p50 ${reachStat.p50} p99 ${reachStat.p99} max ${reachStat.max}, ${expectedLinks} identity→service links`,
  );

  // Saved after each part, so a failure later in the run keeps what was measured.
  const loadAverage: Record<string, number> = {};
  const noteLoad = (what: string) => (loadAverage[what] = +loadavg()[0]!.toFixed(2));
  const summary: Record<string, unknown> = {
    date: new Date().toISOString(),
    scenario: 'policy',
    machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
    // 1-minute load average when each part began: other work on the machine shows here.
    loadAverage,
    source: sourceState(),
    scale,
    seed,
    shape: net.shape,
    servicesPerIdentity: reachStat,
    concurrency,
  };
  const save = () => {
    writeFileSync(resultPath('policy', summary.date as string), `${JSON.stringify(summary, null, 2)}\n`);
  };

  const namespace = `bench_${Date.now().toString(36)}`;
  const cluster = await startLocalCluster({ namespace, dropDatabases: true, env: { LOG_LEVEL: 'warn' } });
  const db = new pg.Pool({ connectionString: cluster.databases.policy, max: Math.max(connections, 2) });
  try {
    const base = cluster.baseUrl;
    const call = async (path: string, method: string, token: string, body?: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'zt-session': token, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(60_000),
      });
      const text = await res.text();
      const json = (text ? JSON.parse(text) : {}) as {
        data: unknown;
        meta?: { pagination?: { totalCount: number } };
        error?: { code?: string };
      };
      return { status: res.status, json };
    };
    const ok = async (path: string, method: string, token: string, body?: unknown) => {
      const r = await call(path, method, token, body);
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
      return r.json;
    };
    const login = async (username: string, password: string, path = api) => {
      const res = await fetch(`${base}${path}/authenticate?method=password`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password }),
      });
      if (res.status !== 200) throw new Error(`login of ${username}: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { data: { token: string } }).data.token;
    };
    const admin = await login(cluster.adminUsername, cluster.adminPassword);
    const otherAdmin = await login(cluster.adminUsername, cluster.adminPassword);

    // Build.
    const ids = new Map<string, string>();
    const phase = async (label: string, path: string, items: object[]) => {
      const t = performance.now();
      let done = 0;
      await inPool(items, concurrency, async (item) => {
        const { data } = await ok(`${api}/${path}`, 'POST', admin, item);
        ids.set((item as { name: string }).name, (data as { id: string }).id);
        if (++done % 1000 === 0) console.log(`  ${label}: ${done}/${items.length}`);
      });
      const ms = performance.now() - t;
      console.log(
        `  ${label.padEnd(28)} ${String(items.length).padStart(6)} in ${(ms / 1000).toFixed(1)} s (${Math.round(items.length / (ms / 1000))}/s)`,
      );
      return {
        count: items.length,
        seconds: +(ms / 1000).toFixed(2),
        perSecond: Math.round(items.length / (ms / 1000)),
      };
    };
    const buildStart = performance.now();
    const build = {
      services: await phase(
        'services',
        'services',
        net.services.map((s) => ({ ...s, encryptionRequired: true })),
      ),
      edgeRouters: await phase('edge routers', 'edge-routers', net.edgeRouters),
      identities: await phase(
        'identities',
        'identities',
        net.identities.map((i) => ({ ...i, type: 'Default', isAdmin: false })),
      ),
      servicePolicies: await phase(
        'service policies',
        'service-policies',
        net.servicePolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      ),
      edgeRouterPolicies: await phase(
        'edge-router policies',
        'edge-router-policies',
        net.edgeRouterPolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      ),
      serviceEdgeRouterPolicies: await phase(
        'service-edge-router policies',
        'service-edge-router-policies',
        net.serviceEdgeRouterPolicies.map((p) => ({ ...p, semantic: 'AnyOf' })),
      ),
      apiSeconds: +((performance.now() - buildStart) / 1000).toFixed(2),
      derivedSeconds: 0,
      links: { identityServices: 0, identityEdgeRouters: 0, serviceEdgeRouters: 0 },
    };
    // Derived: wait (bounded) until the policy database holds every identity → service link.
    const counts = async () =>
      (
        await db.query<{ i: number; s: number; r: number; is: number; ier: number; ser: number }>(
          `select (select count(*)::int from identities where not deleted) as i,
                  (select count(*)::int from services where not deleted) as s,
                  (select count(*)::int from edge_routers where not deleted) as r,
                  (select count(*)::int from identity_services) as "is",
                  (select count(*)::int from identity_edge_routers) as ier,
                  (select count(*)::int from service_edge_routers) as ser`,
        )
      ).rows[0]!;
    let c = await counts();
    const derivedDeadline = Date.now() + buildDeadlineMs;
    while (
      c.i < net.identities.length ||
      c.s < net.services.length ||
      c.r < net.edgeRouters.length ||
      c.is !== expectedLinks
    ) {
      if (Date.now() > derivedDeadline)
        throw new Error(`policy database never caught up: ${JSON.stringify(c)}, expected ${expectedLinks} links`);
      await new Promise((r) => setTimeout(r, 200));
      c = await counts();
    }
    build.derivedSeconds = +((performance.now() - buildStart) / 1000).toFixed(2);
    build.links = { identityServices: c.is, identityEdgeRouters: c.ier, serviceEdgeRouters: c.ser };
    console.log(
      `network built through the API in ${build.apiSeconds} s, derived access complete after ${build.derivedSeconds} s ` +
        `(${c.is} identity→service, ${c.ier} identity→router, ${c.ser} service→router links)`,
    );
    const rssAfterBuild = cluster.processes().map((p) => ({ ...p, rssMiB: rssMiB(p.pid) }));
    summary.build = build;
    summary.rssMiB = { afterBuild: rssAfterBuild };
    save();

    // The measured identity gets a password (a updb authenticator, as test/support/e2e.ts createUser).
    const subjectName = net.identities[subject]!.name;
    const subjectId = ids.get(subjectName)!;
    const password = `pw-${namespace}`;
    await ok(`${api}/authenticators`, 'POST', admin, {
      method: 'updb',
      identityId: subjectId,
      username: subjectName,
      password,
    });
    const user = await login(subjectName, password, clientApi);

    // (a) The list, beside its SQL floor.
    const managementPath = `${api}/identities/${subjectId}/services?limit=100`;
    const clientPath = `${clientApi}/services?limit=100`;
    const probe = await call(clientPath, 'GET', user);
    let listPath = clientPath;
    let listToken = user;
    let listNote = `client GET /services?limit=100 as ${subjectName}`;
    if (probe.status === 501) {
      listPath = managementPath;
      listToken = admin;
      listNote = `management GET /identities/{id}/services?limit=100 as the admin (client GET /services still answers 501)`;
      console.log(`NOTE: client GET /services answers 501 NOT_IMPLEMENTED; measuring ${listNote}`);
    } else if (probe.status !== 200) {
      throw new Error(`client GET /services: ${probe.status} ${JSON.stringify(probe.json)}`);
    }
    const listed = await ok(listPath, 'GET', listToken);
    const listedCount = listed.meta?.pagination?.totalCount;
    if (listedCount !== subjectReach)
      throw new Error(`the list shows ${listedCount} services for ${subjectName}, expected ${subjectReach}`);

    const pageSql = `select s.state from identity_services x join services s on s.id = x.service_id and not s.deleted
                      where x.identity_id = $1 order by s.name limit 100`;
    const countSql = `select count(*)::int as n from identity_services x join services s on s.id = x.service_id and not s.deleted
                       where x.identity_id = $1`;
    const sqlRun = async (label: string, parallel: number, ms: number, withCount: boolean) => {
      const lat: number[] = [];
      const end = performance.now() + ms;
      await Promise.all(
        Array.from({ length: parallel }, async () => {
          const client = await db.connect();
          try {
            while (performance.now() < end && lat.length < 1_000_000) {
              const t = performance.now();
              const page = await client.query({ name: 'bench-page', text: pageSql, values: [subjectId] });
              if (withCount) await client.query({ name: 'bench-count', text: countSql, values: [subjectId] });
              if (page.rowCount !== Math.min(100, subjectReach)) throw new Error(`SQL page has ${page.rowCount} rows`);
              lat.push(performance.now() - t);
            }
          } finally {
            client.release();
          }
        }),
      );
      const r = { ...stat(lat), perSecond: Math.round(lat.length / (ms / 1000)) };
      console.log(`${label.padEnd(46)} ${String(r.perSecond).padStart(7)} /s     p50 ${r.p50} ms  p99 ${r.p99} ms`);
      return r;
    };
    const httpRun = async (label: string) => {
      await autocannon({ url: `${base}${listPath}`, connections, duration: 2, headers: { 'zt-session': listToken } });
      const r = await autocannon({
        url: `${base}${listPath}`,
        connections,
        duration: seconds,
        headers: { 'zt-session': listToken },
      });
      const out = {
        requestsPerSecond: Math.round(r.requests.average),
        p50: r.latency.p50,
        p99: r.latency.p99,
        errors: r.errors,
        non2xx: r.non2xx,
      };
      console.log(
        `${label.padEnd(46)} ${String(out.requestsPerSecond).padStart(7)} req/s  p50 ${out.p50} ms  p99 ${out.p99} ms  errors ${out.errors}  non-2xx ${out.non2xx}`,
      );
      return out;
    };
    // Sequential, one request at a time, timed here (autocannon's histogram has whole milliseconds).
    const sequential = async (label: string, count: number) => {
      const lat: number[] = [];
      for (let i = 0; i < count; i++) {
        const t = performance.now();
        await ok(listPath, 'GET', listToken);
        lat.push(performance.now() - t);
      }
      const r = stat(lat);
      console.log(`${label.padEnd(46)}                p50 ${r.p50} ms  p99 ${r.p99} ms`);
      return r;
    };
    noteLoad('list');
    console.log(`\n(a) ${listNote}, ${subjectReach} services; SQL on the policy database, same run`);
    await sqlRun('SQL warm-up (not recorded)', 1, 1000, true);
    const sqlPageOnly = await sqlRun(`SQL page only, ${connections} connections`, connections, seconds * 1000, false);
    const sqlPageCount = await sqlRun(
      `SQL page + count, ${connections} connections`,
      connections,
      seconds * 1000,
      true,
    );
    const sqlSequential = await sqlRun('SQL page + count, 1 connection', 1, 3000, true);
    const http = await httpRun(`HTTP list, ${connections} connections`);
    const httpSequential = await sequential('HTTP list, 1 at a time (500)', 500);
    const list = {
      endpoint: listPath.replace(subjectId, '{id}'),
      note: listNote,
      services: subjectReach,
      connections,
      durationSeconds: seconds,
      http,
      httpSequential,
      sqlPageOnly,
      sqlPageCount,
      sqlSequential,
      p50VsSql: +(http.p50 / sqlPageCount.p50).toFixed(2),
      goals: { p50Within2xSql: http.p50 <= 2 * sqlPageCount.p50, p99AtMost15ms: http.p99 <= 15 },
    };
    console.log(
      `HTTP p50 = ${list.p50VsSql}× the SQL (goal ≤ 2×: ${list.goals.p50Within2xSql ? 'met' : 'not met'}), p99 ${http.p99} ms (goal ≤ 15 ms: ${list.goals.p99AtMost15ms ? 'met' : 'not met'})`,
    );
    summary.list = list;
    save();

    // (b) Attribute change → the changed list visible.
    // A read that fails (e.g. 503 TIMEOUT while the policy service is busy) counts as "not visible yet".
    let readErrors = 0;
    const countOf = async (token: string) => {
      const r = await call(managementPath, 'GET', token);
      if (r.status >= 300) {
        readErrors++;
        return undefined;
      }
      return r.json.meta?.pagination?.totalCount;
    };
    const poll = async (token: string, expected: number) => {
      const deadline = Date.now() + pollDeadlineMs;
      let polls = 0;
      while ((await countOf(token)) !== expected) {
        polls++;
        if (Date.now() > deadline) return { visible: false, polls };
      }
      return { visible: true, polls: polls + 1 };
    };
    const patch = (attrs: string[]) => ok(`${api}/identities/${subjectId}`, 'PATCH', admin, { roleAttributes: attrs });
    const floor: number[] = [];
    const other: number[] = [];
    const same: number[] = [];
    let otherTimeouts = 0;
    let sameTimeouts = 0;
    let sameFirstReadHits = 0;
    let otherPolls = 0;
    const on = [...subjectAttrs, toggle];
    noteLoad('change');
    console.log(
      `\n(b) PATCH roleAttributes of ${subjectName} ± ${toggle} (${subjectReach} ↔ ${toggledReach} services), ${rounds} rounds`,
    );
    for (let i = 0; i < rounds; i++) {
      // Floor: a PATCH to an attribute no policy selects, then one read that needs nothing from it.
      let t = performance.now();
      await patch([...subjectAttrs, `noop${i}`]);
      const seen = await countOf(otherAdmin);
      if (seen !== subjectReach && seen !== undefined) throw new Error('the floor write changed the list');
      floor.push(performance.now() - t);
      // Another session: polled until the list shows the change.
      t = performance.now();
      await patch(on);
      const o = await poll(otherAdmin, toggledReach);
      if (o.visible) other.push(performance.now() - t);
      else otherTimeouts++;
      otherPolls += o.polls;
      // Same session: the writer's first read right after the write's answer.
      t = performance.now();
      await patch(subjectAttrs);
      if ((await countOf(admin)) === subjectReach) {
        sameFirstReadHits++;
        same.push(performance.now() - t);
      } else {
        const s = await poll(admin, subjectReach);
        if (s.visible) same.push(performance.now() - t);
        else sameTimeouts++;
      }
    }
    const change = {
      rounds,
      toggledAttribute: toggle,
      services: { before: subjectReach, after: toggledReach },
      floorPatchThenRead: stat(floor),
      otherSessionPatchToVisible: {
        ...stat(other),
        timeouts: otherTimeouts,
        pollsPerRound: +(otherPolls / rounds).toFixed(1),
      },
      sameSessionPatchToVisible: { ...stat(same), firstReadHits: sameFirstReadHits, timeouts: sameTimeouts },
      failedReads: readErrors,
      goals: { p99AtMost250ms: otherTimeouts === 0 && stat(other).p99 <= 250 },
    };
    summary.change = change;
    save();
    const row = (name: string, x: { p50: number; p99: number }) =>
      console.log(`${name.padEnd(46)} p50 ${String(x.p50).padStart(8)} ms  p99 ${String(x.p99).padStart(8)} ms`);
    row('floor: PATCH (no access change) + one GET', change.floorPatchThenRead);
    row('other session: PATCH → list changed (polled)', change.otherSessionPatchToVisible);
    row('same session: PATCH → list changed', change.sameSessionPatchToVisible);
    console.log(
      `other-session timeouts ${otherTimeouts}, ${change.otherSessionPatchToVisible.pollsPerRound} polls per round; same-session first reads showing the change: ${sameFirstReadHits} of ${rounds}`,
    );

    // (c) One `#all` service policy → visible for the subject (it then reaches every service).
    noteLoad('allPolicy');
    readErrors = 0;
    console.log(`\n(c) one #all Dial service policy in this network`);
    let t = performance.now();
    await ok(`${api}/service-policies`, 'POST', admin, {
      name: 'bench-floor-policy',
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: ['#nobody'],
      serviceRoles: ['#nothing'],
    });
    await countOf(otherAdmin);
    const allFloorMs = performance.now() - t;
    t = performance.now();
    // The gateway may give up on a long write (504 after its request timeout) while the policy
    // service goes on; the answer's status is recorded and visibility polled either way.
    const allPost = await call(`${api}/service-policies`, 'POST', admin, {
      name: 'bench-all',
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: ['#all'],
      serviceRoles: ['#all'],
    });
    const allPostMs = performance.now() - t;
    if (allPost.status !== 201)
      console.log(`POST #all policy answered ${allPost.status} ${JSON.stringify(allPost.json)}`);
    const allDeadline = Date.now() + allDeadlineMs;
    let allVisibleMs: number | undefined;
    let allPolls = 0;
    while (Date.now() < allDeadline) {
      allPolls++;
      if ((await countOf(otherAdmin)) === net.services.length) {
        allVisibleMs = performance.now() - t;
        break;
      }
    }
    // Until the policy links every identity and every service (access is read from these links,
    // docs/adr/0011), bounded by the same deadline.
    let allLinkedMs: number | undefined;
    const live = (
      await db.query<{ i: number; s: number }>(
        `select (select count(*)::int from identities where not deleted) as i,
                (select count(*)::int from services where not deleted) as s`,
      )
    ).rows[0]!;
    const allLinks = live.i + live.s;
    const allId = (allPost.json as { data?: { id?: string } } | undefined)?.data?.id;
    while (allId && Date.now() < allDeadline) {
      const n = (
        await db.query<{ n: number }>(
          `select (select count(*) from service_policy_identities where policy_id = $1)
                + (select count(*) from service_policy_services where policy_id = $1) as n`,
          [allId],
        )
      ).rows[0]!.n;
      if (Number(n) === allLinks) {
        allLinkedMs = performance.now() - t;
        break;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const all = {
      floorPostNoMatchPlusRead: +allFloorMs.toFixed(1),
      postStatus: allPost.status,
      postAnswered: +allPostMs.toFixed(1),
      visibleForOneIdentity: allVisibleMs === undefined ? null : +allVisibleMs.toFixed(1),
      everyIdentityLinked: allLinkedMs === undefined ? null : +allLinkedMs.toFixed(1),
      polls: allPolls,
      failedReads: readErrors,
      deadlineSeconds: allDeadlineMs / 1000,
    };
    console.log(
      `floor: POST a policy selecting nothing + one GET ${all.floorPostNoMatchPlusRead} ms; #all: POST answered ${all.postStatus} after ${all.postAnswered} ms, ` +
        `visible for ${subjectName} after ${all.visibleForOneIdentity ?? 'timeout'} ms (${allPolls} polls, ${readErrors} failed), ` +
        `its ${allLinks} links after ${all.everyIdentityLinked ?? 'timeout'} ms`,
    );

    const rss = cluster.processes().map((p) => ({ ...p, rssMiB: rssMiB(p.pid) }));
    console.log(`\nRSS: ${rss.map((p) => `${p.service}#${p.replica} ${p.rssMiB ?? '?'} MiB`).join(', ')}`);

    summary.allPolicy = all;
    summary.rssMiB = { afterBuild: rssAfterBuild, atEnd: rss };
    save();
  } finally {
    await db.end();
    await cluster.stop();
  }
}
