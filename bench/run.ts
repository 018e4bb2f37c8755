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
