/**
 * `npm run bench`: every scenario, `npm run bench -- <scenario> [<scenario>…]` some of them. Each
 * runs against the cluster on this machine's NATS, Redis and Postgres (separate processes) beside
 * its floor measured in the same run, prints its figures and records them in
 * bench/results/<date>-<scenario>.json (`BENCH_RESULTS_DIR`; ignored by git); docs/BENCHMARKS.md
 * summarises them by hand.
 *
 * - `read` (issue 13 b, bench/read.ts): authenticated `GET /current-identity` at 64 connections
 *   beside bare Node https and an express hello-world;
 * - `login` (a, bench/login.ts): password logins at 16 connections beside raw argon2 verifies, and
 *   other sessions' reads during the storm beside the same reads while idle;
 * - `bulk` (d, bench/bulk.ts): 10,000 identities created into a network of 10,000;
 * - `lists` (g, bench/lists.ts): management identity lists over 100,000 identities beside SQL;
 * - `startup` (bench/startup.ts): `npm start` to the first answer, cluster services to ready;
 * - `visibility`, `emit`, `policy`, `sessions`: write → visible, event numbering, policy engine,
 *   edge sessions;
 * - `what-if` (issue 24, bench/what-if.ts): what-if analysis of policy changes on the policy
 *   benchmark's network, p99 against its 1 s target;
 * - `circuits` (issue 30 §8, bench/circuits.ts): binds and dials through one (simulated) router's
 *   control channel, under `npm start` and on the cluster, beside the reference controller;
 * - `hot-paths` (issue 32, bench/hot-paths.ts): the most used Edge API calls (current-identity,
 *   logins, identity creates, the client's services, Dial sessions, a deep management list), idle
 *   RSS and spawn → first answer, under `npm start` and on the cluster beside the reference 1.1.9;
 * - `terminators` (issue 34, bench/terminators.ts): 40,000 terminators bound through a router while
 *   a client dials, the rate of each 10,000 and the dials' p99, beside the reference.
 * Loopback only; every loop is bounded.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { startLocalCluster } from '../deploy/local-cluster.ts';
import { benchBulk } from './bulk.ts';
import { benchCircuits } from './circuits.ts';
import { resultPath } from './common.ts';
import { benchEmitCost } from './emit-cost.ts';
import { benchHotPaths } from './hot-paths.ts';
import { benchLists } from './lists.ts';
import { benchLogin } from './login.ts';
import { benchPolicy } from './policy.ts';
import { benchRead } from './read.ts';
import { benchSessions } from './sessions.ts';
import { benchStartup } from './startup.ts';
import { benchTerminators } from './terminators.ts';
import { benchWhatIf } from './what-if.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // loopback only, self-issued certificates

/** Scenarios: `npm run bench` runs all, `npm run bench -- <name>` one. */
const scenarios = [
  'read',
  'login',
  'bulk',
  'lists',
  'startup',
  'visibility',
  'emit',
  'policy',
  'sessions',
  'what-if',
  'circuits',
  'hot-paths',
  'terminators',
] as const;
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const w of wanted)
  if (!(scenarios as readonly string[]).includes(w))
    throw new Error(`unknown scenario ${w}; one of ${scenarios.join(', ')}`);
const runs = (name: (typeof scenarios)[number]) => wanted.length === 0 || wanted.includes(name);

if (runs('emit')) {
  const emit = await benchEmitCost();
  const date = new Date().toISOString();
  writeFileSync(
    resultPath('emit', date),
    `${JSON.stringify({ date, scenario: 'emit', machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version }, ...emit }, null, 2)}\n`,
  );
}
if (runs('visibility')) await benchVisibility();
if (runs('read')) await benchRead();
if (runs('login')) await benchLogin();
if (runs('bulk')) await benchBulk();
if (runs('lists')) await benchLists();
if (runs('startup')) await benchStartup();
if (runs('policy')) await benchPolicy();
if (runs('sessions')) await benchSessions();
if (runs('what-if')) await benchWhatIf();
if (runs('circuits')) await benchCircuits();
if (runs('hot-paths')) await benchHotPaths();
if (runs('terminators')) await benchTerminators();

/** Percentile of sorted numbers. */
function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2);
}

/**
 * Write → visible in another service (docs/adr/0008), on a cluster with two gateways and two
 * policy replicas: `PATCH /identities/{id}` (auth) through gateway A, then the policy-owned
 * `/identity-role-attributes` through gateway B. Same session: one GET right after the write's
 * answer must already see it (read-your-writes; the GET waits for policy to apply the write).
 * Other session: polled until visible. Floor, same run: the same PATCH followed by the same GET
 * for an attribute that needs no wait.
 */
async function benchVisibility() {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 300);
  const namespace = `bench_${Date.now().toString(36)}`;
  const cluster = await startLocalCluster({
    namespace,
    dropDatabases: true,
    replicas: { gateway: 2, policy: 2 },
    env: { LOG_LEVEL: 'warn' },
  });
  try {
    const [portA, portB] = cluster.gatewayPorts();
    const a = `https://127.0.0.1:${portA}`;
    const b = `https://127.0.0.1:${portB}`;
    const api = '/edge/management/v1';
    const call = async (url: string, method: string, token: string, body?: unknown) => {
      const res = await fetch(url, {
        method,
        headers: { 'zt-session': token, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = (await res.json()) as { data: unknown };
      if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };
    const login = async () =>
      (
        (await (
          await fetch(`${a}${api}/authenticate?method=password`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ username: cluster.adminUsername, password: cluster.adminPassword }),
          })
        ).json()) as { data: { token: string } }
      ).data.token;
    const writer = await login();
    const other = await login();
    const { id } = (await call(`${a}${api}/identities`, 'POST', writer, {
      name: `bench-${namespace}`,
      type: 'User',
      isAdmin: false,
    })) as { id: string };
    const listed = async (url: string, token: string, attr: string) =>
      (
        (await call(
          `${url}${api}/identity-role-attributes?filter=${encodeURIComponent(`id = "${attr}"`)}`,
          'GET',
          token,
        )) as string[]
      ).includes(attr);

    const floor: number[] = [];
    const same: number[] = [];
    const others: number[] = [];
    let sameMisses = 0;
    for (let i = 0; i < rounds; i++) {
      // Floor: write, then a read that needs nothing from the write (a fresh session's read of an old attribute).
      let t = performance.now();
      await call(`${a}${api}/identities/${id}`, 'PATCH', writer, { roleAttributes: [`floor${i}`] });
      await listed(b, other, 'never-written');
      floor.push(performance.now() - t);
      // Same session: the read after the write's answer sees it.
      t = performance.now();
      await call(`${a}${api}/identities/${id}`, 'PATCH', writer, { roleAttributes: [`same${i}`] });
      if (!(await listed(b, writer, `same${i}`))) sameMisses++;
      same.push(performance.now() - t);
      // Another session: polled until it sees the write.
      t = performance.now();
      await call(`${a}${api}/identities/${id}`, 'PATCH', writer, { roleAttributes: [`other${i}`] });
      const deadline = Date.now() + 10_000;
      while (!(await listed(b, other, `other${i}`))) {
        if (Date.now() > deadline) throw new Error('the other session never saw the write');
      }
      others.push(performance.now() - t);
    }
    const stat = (xs: number[]) => {
      const s = [...xs].sort((x, y) => x - y);
      return { p50: pct(s, 50), p99: pct(s, 99) };
    };
    const summary = {
      date: new Date().toISOString(),
      scenario: 'visibility',
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      rounds,
      topology: { gateways: 2, policyReplicas: 2 },
      floorWriteThenRead: stat(floor),
      sameSessionWriteToVisible: { ...stat(same), misses: sameMisses },
      otherSessionWriteToVisible: stat(others),
    };
    const ratio = (x: { p50: number }) => +(x.p50 / summary.floorWriteThenRead.p50).toFixed(2);
    const row = (name: string, x: { p50: number; p99: number }) =>
      console.log(
        `${name.padEnd(44)} p50 ${String(x.p50).padStart(7)} ms  p99 ${String(x.p99).padStart(7)} ms  ×floor ${ratio(x)}`,
      );
    row('floor: PATCH (auth) + GET (policy)', summary.floorWriteThenRead);
    row('same session: PATCH → visible in policy', summary.sameSessionWriteToVisible);
    row('other session: PATCH → visible in policy', summary.otherSessionWriteToVisible);
    console.log(`same-session reads that missed their own write: ${sameMisses} of ${rounds}`);
    writeFileSync(resultPath('visibility', summary.date), `${JSON.stringify(summary, null, 2)}\n`);
  } finally {
    await cluster.stop();
  }
}
