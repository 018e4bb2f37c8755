/**
 * `npm run bench`: throughput and latency of the controller's hot path, authenticated
 * `GET /edge/client/v1/current-identity` at 64 connections through the gateway (session check in
 * Redis, NATS round trip to auth, Postgres read), beside a bare Node `https` server and an express
 * hello-world measured in the same run on the same machine. Loopback only; bounded duration.
 * Results go to bench/results/<date>.json and are summarised in docs/BENCHMARKS.md by hand.
 */
import 'reflect-metadata';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { startLocalCluster } from '../deploy/local-cluster.ts';
import { benchEmitCost } from './emit-cost.ts';
import { benchPolicy } from './policy.ts';
import { benchSessions } from './sessions.ts';

process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // loopback only, self-issued certificates
const root = fileURLToPath(new URL('..', import.meta.url));
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);

interface Result {
  name: string;
  requestsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  errors: number;
  non2xx: number;
}

async function measure(name: string, url: string, headers: Record<string, string> = {}): Promise<Result> {
  // Warm up (JIT, pools, TLS sessions), then measure.
  await autocannon({ url, connections, duration: 2, headers });
  const r = await autocannon({ url, connections, duration, headers });
  const result = {
    name,
    requestsPerSecond: Math.round(r.requests.average),
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
  };
  console.log(
    `${name.padEnd(38)} ${String(result.requestsPerSecond).padStart(7)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms  errors ${result.errors}  non-2xx ${result.non2xx}`,
  );
  return result;
}

async function startBaseline(
  kind: 'node' | 'express',
  cert: string,
  key: string,
): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'bench', 'baseline-server.ts'), kind, cert, key],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error(`${kind} baseline exited`)));
  });
  return { port, child };
}

const dir = mkdtempSync(join(tmpdir(), 'bench-'));
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-days',
    '1',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
  ],
  { stdio: 'ignore' },
);

/** Scenarios: `npm run bench` runs all, `npm run bench -- <name>` one. */
const scenarios = ['read', 'visibility', 'emit', 'policy', 'sessions'] as const;
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const w of wanted)
  if (!(scenarios as readonly string[]).includes(w))
    throw new Error(`unknown scenario ${w}; one of ${scenarios.join(', ')}`);
const runs = (name: (typeof scenarios)[number]) => wanted.length === 0 || wanted.includes(name);

if (runs('emit')) {
  const emit = await benchEmitCost();
  const date = new Date().toISOString();
  mkdirSync(join(root, 'bench', 'results'), { recursive: true });
  writeFileSync(
    join(root, 'bench', 'results', `${date.slice(0, 19).replace(/:/g, '-')}-emit.json`),
    `${JSON.stringify({ date, scenario: 'emit', machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version }, ...emit }, null, 2)}\n`,
  );
}
if (runs('visibility')) await benchVisibility();
if (runs('read')) await benchRead();
if (runs('policy')) await benchPolicy();
if (runs('sessions')) await benchSessions();

async function benchRead() {
  const namespace = `bench_${Date.now().toString(36)}`;
  const cluster = await startLocalCluster({ namespace, dropDatabases: true, env: { LOG_LEVEL: 'warn' } });
  const results: Result[] = [];
  const baselines: ChildProcess[] = [];
  try {
    const login = await fetch(`${cluster.baseUrl}/edge/client/v1/authenticate?method=password`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: cluster.adminUsername, password: cluster.adminPassword }),
    });
    const token = ((await login.json()) as { data: { token: string } }).data.token;

    const node = await startBaseline('node', join(dir, 'cert.pem'), join(dir, 'key.pem'));
    const exp = await startBaseline('express', join(dir, 'cert.pem'), join(dir, 'key.pem'));
    baselines.push(node.child, exp.child);

    results.push(await measure('bare node https', `https://127.0.0.1:${node.port}/`));
    results.push(await measure('express hello-world (https)', `https://127.0.0.1:${exp.port}/`));
    results.push(await measure('gateway GET /version (no session)', `${cluster.baseUrl}/edge/client/v1/version`));
    results.push(
      await measure('gateway GET /current-identity (auth)', `${cluster.baseUrl}/edge/client/v1/current-identity`, {
        'zt-session': token,
      }),
    );

    const gateway = results[3]!;
    const summary = {
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      connections,
      durationSeconds: duration,
      results,
      ratios: {
        currentIdentityVsExpress: +(gateway.requestsPerSecond / results[1]!.requestsPerSecond).toFixed(3),
        currentIdentityVsNode: +(gateway.requestsPerSecond / results[0]!.requestsPerSecond).toFixed(3),
      },
    };
    console.log(
      `\n/current-identity through the gateway: ${(summary.ratios.currentIdentityVsExpress * 100).toFixed(1)}% of express, ${(summary.ratios.currentIdentityVsNode * 100).toFixed(1)}% of bare node`,
    );
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    writeFileSync(
      join(root, 'bench', 'results', `${summary.date.slice(0, 19).replace(/:/g, '-')}.json`),
      `${JSON.stringify(summary, null, 2)}\n`,
    );
  } finally {
    for (const b of baselines) b.kill('SIGTERM');
    await cluster.stop();
  }
}

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
    mkdirSync(join(root, 'bench', 'results'), { recursive: true });
    writeFileSync(
      join(root, 'bench', 'results', `${summary.date.slice(0, 19).replace(/:/g, '-')}-visibility.json`),
      `${JSON.stringify(summary, null, 2)}\n`,
    );
  } finally {
    await cluster.stop();
  }
}
