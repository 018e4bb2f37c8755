/**
 * `npm run bench -- read` (issue 13 b): authenticated `GET /edge/client/v1/current-identity` at 64
 * connections through the gateway (session check in Redis; the answer kept by the gateway after the
 * first read, docs/adr/0015 — the lookups by result are recorded), and `GET /current-api-session`,
 * which is not kept (NATS round trip to auth every time), beside a bare Node `https` server and an express hello-world (bench/baseline-server.ts, each its
 * own process) measured in the same run, with autocannon for `BENCH_SECONDS` (10) after a
 * `BENCH_WARMUP_SECONDS` (2) warm-up. Records req/s, p50, p99, errors, the ratio to express and the
 * RSS of every process (cluster and baselines) in bench/results/<date>-read.json.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { LocalCluster } from '../deploy/local-cluster.ts';
import {
  type ScenarioOptions,
  adminLogin,
  clusterRss,
  cpuBetween,
  cpuSnapshot,
  formatCpu,
  formatRss,
  gitState,
  load1,
  machine,
  recordResult,
  root,
  withCluster,
} from './common.ts';

export interface CannonResult {
  name: string;
  requestsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  errors: number;
  non2xx: number;
}

export function cannonResult(name: string, r: autocannon.Result): CannonResult {
  const result = {
    name,
    requestsPerSecond: Math.round(r.requests.average || r.requests.total / (r.duration || 1)),
    latencyP50: r.latency.p50,
    latencyP99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
  };
  console.log(
    `${name.padEnd(44)} ${String(result.requestsPerSecond).padStart(7)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms  errors ${result.errors}  non-2xx ${result.non2xx}`,
  );
  return result;
}

/** Self-signed ECDSA P-256 certificate for the baselines (the gateway's kind of key). */
export function baselineCert(): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'bench-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
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
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/** Spawns bench/baseline-server.ts; resolves with its port once it listens (and the time that took). */
export async function startBaseline(
  kind: 'node' | 'express',
  tls: { cert: string; key: string },
): Promise<{ port: number; child: ChildProcess; listeningMs: number }> {
  const t = performance.now();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(root, 'bench', 'baseline-server.ts'), kind, tls.cert, tls.key],
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
  return { port, child, listeningMs: performance.now() - t };
}

export async function benchRead(
  options: ScenarioOptions & { seconds?: number; warmupSeconds?: number; connections?: number } = {},
) {
  const duration = options.seconds ?? Number(process.env.BENCH_SECONDS ?? 10);
  const warmup = options.warmupSeconds ?? Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
  const connections = options.connections ?? Number(process.env.BENCH_CONNECTIONS ?? 64);
  return withCluster(options.cluster, 'read', {}, async (cluster) => {
    const baselines: ChildProcess[] = [];
    try {
      const token = await adminLogin(cluster);
      const tls = baselineCert();
      const node = await startBaseline('node', tls);
      baselines.push(node.child);
      const exp = await startBaseline('express', tls);
      baselines.push(exp.child);
      const loadAverage: Record<string, number> = {};
      const cpu: Record<string, ReturnType<typeof cpuBetween>> = {};
      const measure = async (name: string, url: string, headers: Record<string, string> = {}) => {
        if (warmup > 0) await autocannon({ url, connections, duration: warmup, headers });
        loadAverage[name] = load1();
        const before = cpuSnapshot(cluster);
        const r = await autocannon({ url, connections, duration, headers });
        cpu[name] = cpuBetween(before, cpuSnapshot(cluster), r.requests.total);
        return cannonResult(name, r);
      };
      const results = [
        await measure('bare node https', `https://127.0.0.1:${node.port}/`),
        await measure('express hello-world (https)', `https://127.0.0.1:${exp.port}/`),
        await measure('gateway GET /version (no session)', `${cluster.baseUrl}/edge/client/v1/version`),
        await measure('gateway GET /current-identity (auth)', `${cluster.baseUrl}/edge/client/v1/current-identity`, {
          'zt-session': token,
        }),
        // A session-scoped read the gateway does not keep: the bus hop to auth on every request.
        await measure(
          'gateway GET /current-api-session (auth, not kept)',
          `${cluster.baseUrl}/edge/client/v1/current-api-session`,
          { 'zt-session': token },
        ),
      ];
      const answerCache = await answerCacheLookups(cluster);
      const rss = clusterRss(cluster, { 'baseline-node': node.child.pid, 'baseline-express': exp.child.pid });
      const gateway = results[3]!;
      const summary = {
        date: new Date().toISOString(),
        scenario: 'read',
        machine: machine(),
        ...gitState(),
        connections,
        durationSeconds: duration,
        loadAverage1m: loadAverage,
        results,
        ratios: {
          currentIdentityVsExpress: +(gateway.requestsPerSecond / results[1]!.requestsPerSecond).toFixed(3),
          currentIdentityVsNode: +(gateway.requestsPerSecond / results[0]!.requestsPerSecond).toFixed(3),
        },
        targets: { must: 'current-identity ≥ 30 % of express', goal: '≥ 70 %' },
        // /current-identity is answered from the gateway's answer cache once kept (docs/adr/0015).
        answerCacheLookups: answerCache,
        cpuPerScenario: cpu,
        rssMiB: rss,
      };
      console.log(
        `\n/current-identity through the gateway: ${(summary.ratios.currentIdentityVsExpress * 100).toFixed(1)}% of express (must ≥ 30 %, goal ≥ 70 %), ${(summary.ratios.currentIdentityVsNode * 100).toFixed(1)}% of bare node`,
      );
      console.log(`CPU during /current-identity: ${formatCpu(cpu[results[3]!.name]!)}`);
      console.log(`gateway answer cache lookups: ${JSON.stringify(answerCache)}`);
      console.log(`RSS: ${formatRss(rss)}\n`);
      await recordResult('read', summary, options.record);
      return summary;
    } finally {
      for (const b of baselines) b.kill('SIGTERM');
    }
  });
}

/** The gateways' answer-cache lookups by result (hit, miss, bypass), from their `/metrics`. */
async function answerCacheLookups(cluster: LocalCluster): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const p of cluster.processes().filter((x) => x.service === 'gateway')) {
    const text = await (await fetch(`http://127.0.0.1:${p.healthPort}/metrics`)).text();
    for (const line of text.split('\n')) {
      const m = /^ziti_gateway_answer_cache_lookups_total\{[^}]*result="(\w+)"[^}]*\} (\S+)/.exec(line);
      if (m) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
  }
  return out;
}
