/**
 * Shared by the issue-13 scenarios (bench/login.ts, read.ts, bulk.ts, lists.ts, startup.ts): the
 * cluster they run on, HTTP helpers, percentiles, the RSS of every process, the load average and
 * the commit measured, and where results are recorded. Loopback only.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LocalCluster, startLocalCluster } from '../deploy/local-cluster.ts';

// The cluster's certificates are its own (loopback only).
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

export const root = fileURLToPath(new URL('..', import.meta.url));
export const clientApi = '/edge/client/v1';
export const managementApi = '/edge/management/v1';

/** Percentile of ascending numbers (nearest rank below), rounded to 0.01. */
export function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return +sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!.toFixed(2);
}

export function latencyStats(xs: number[]): { count: number; p50: number; p99: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { count: s.length, p50: pct(s, 50), p99: pct(s, 99), max: +(s.at(-1) ?? Number.NaN).toFixed(2) };
}

/** VmRSS (MiB) of a process, from /proc; undefined when it is gone. */
export function rssMiB(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

export interface ProcessRss {
  process: string;
  pid: number | undefined;
  rssMiB: number | undefined;
}

/** RSS of every cluster process, plus any extra (name → pid) such as a baseline server. */
export function clusterRss(cluster: LocalCluster | undefined, extra: Record<string, number | undefined> = {}) {
  const out: ProcessRss[] = (cluster?.processes() ?? []).map((p) => ({
    process: `${p.service}#${p.replica}`,
    pid: p.pid,
    rssMiB: rssMiB(p.pid),
  }));
  for (const [name, pid] of Object.entries(extra)) out.push({ process: name, pid, rssMiB: rssMiB(pid) });
  return out;
}

export function formatRss(rss: ProcessRss[]): string {
  return rss.map((p) => `${p.process} ${p.rssMiB ?? '?'} MiB`).join(', ');
}

export const load1 = () => +loadavg()[0]!.toFixed(2);

/** The commit measured and how many service/package files differ from it (the services run from the work tree). */
export function gitState(): {
  commit?: string;
  uncommittedServiceAndPackageFiles?: number;
  uncommittedDiffSha256?: string;
} {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const changed = git('status', '--porcelain', '--', 'services', 'packages', 'deploy').split('\n').filter(Boolean);
    // Other work in the tree: a digest of the uncommitted diff identifies the code the services ran.
    const diff = execFileSync('git', ['diff', 'HEAD', '--', 'services', 'packages', 'deploy'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 256 * 1024 * 1024,
    });
    return {
      commit: git('rev-parse', 'HEAD'),
      uncommittedServiceAndPackageFiles: changed.length,
      uncommittedDiffSha256: createHash('sha256').update(diff).digest('hex').slice(0, 16),
    };
  } catch {
    // Not a git work tree: a clean export of a commit (`git archive <commit>`), named by BENCH_COMMIT.
    return process.env.BENCH_COMMIT ? { commit: process.env.BENCH_COMMIT, uncommittedServiceAndPackageFiles: 0 } : {};
  }
}

export function machine() {
  return { cpus: cpus().length, model: cpus()[0]?.model, node: process.version };
}

/**
 * Where a run's result files go: `BENCH_RESULTS_DIR` (relative to the working directory), by default
 * bench/results, which git ignores (results are the operator's, not the tree's; docs/BENCHMARKS.md
 * records the figures). Created when missing.
 */
export function resultsDir(): string {
  const dir = process.env.BENCH_RESULTS_DIR ? resolve(process.env.BENCH_RESULTS_DIR) : join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The file of one scenario's result: <results dir>/<date>-<scenario>.json, `date` an ISO timestamp. */
export function resultPath(scenario: string, date: string): string {
  return join(resultsDir(), `${date.slice(0, 19).replace(/:/g, '-')}-${scenario}.json`);
}

/**
 * Writes <results dir>/<date>-<scenario>.json (unless `record` is false), formatted as the repo's
 * Prettier wants it, and returns the path.
 */
export async function recordResult(scenario: string, summary: object, record = true): Promise<string | undefined> {
  if (!record) return undefined;
  const path = resultPath(scenario, new Date().toISOString());
  let text = `${JSON.stringify(summary, null, 2)}\n`;
  try {
    const prettier = await import('prettier');
    text = await prettier.format(text, { ...(await prettier.resolveConfig(path)), filepath: path });
  } catch {
    // unformatted is still valid JSON
  }
  writeFileSync(path, text);
  console.log(`recorded ${path}`);
  return path;
}

/** Options every scenario takes: an already running cluster (the smoke test shares one), whether to record. */
export interface ScenarioOptions {
  cluster?: LocalCluster;
  record?: boolean;
}

/**
 * A fresh cluster of one replica each (own databases and namespace, dropped at the end), with
 * `BENCH_NODE_ARGS` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) passed to every service.
 */
const running = new Set<LocalCluster>();
let interruptHandled = false;

/** Ctrl-C or SIGTERM during a run stops the clusters it started (and drops their databases). */
function stopOnInterrupt(): void {
  if (interruptHandled) return;
  interruptHandled = true;
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      console.error(`\n${signal}: stopping ${running.size} bench cluster(s)`);
      void Promise.allSettled([...running].map((c) => c.stop())).then(() => process.exit(130));
    });
}

export async function benchCluster(tag: string, env: Record<string, string> = {}): Promise<LocalCluster> {
  stopOnInterrupt();
  const cluster = await startLocalCluster({
    namespace: `bench_${tag}_${Date.now().toString(36)}`,
    dropDatabases: true,
    ...(process.env.BENCH_NODE_ARGS ? { nodeArgs: process.env.BENCH_NODE_ARGS.split(' ') } : {}),
    env: { LOG_LEVEL: 'warn', ...env },
  });
  running.add(cluster);
  const stop = cluster.stop;
  return {
    ...cluster,
    stop: async () => {
      running.delete(cluster);
      await stop();
    },
  };
}

/** Runs `fn` on the given cluster, or on a fresh one that is stopped afterwards. */
export async function withCluster<T>(
  given: LocalCluster | undefined,
  tag: string,
  env: Record<string, string>,
  fn: (c: LocalCluster) => Promise<T>,
): Promise<T> {
  const cluster = given ?? (await benchCluster(tag, env));
  try {
    return await fn(cluster);
  } finally {
    if (!given) await cluster.stop();
  }
}

export interface Answer {
  status: number;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** One HTTPS call to the cluster's first gateway. */
export async function call(
  cluster: LocalCluster,
  api: 'client' | 'management',
  method: string,
  path: string,
  token?: string,
  body?: unknown,
): Promise<Answer> {
  const res = await fetch(`${cluster.baseUrl}/edge/${api}/v1${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token ? { 'zt-session': token } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, json };
}

export async function login(cluster: LocalCluster, username: string, password: string): Promise<string> {
  const r = await call(cluster, 'client', 'POST', '/authenticate?method=password', undefined, { username, password });
  if (r.status !== 200) throw new Error(`login ${username}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.data.token as string;
}

export const adminLogin = (cluster: LocalCluster) => login(cluster, cluster.adminUsername, cluster.adminPassword);

/** POST that must answer 201; the new id. */
export async function create(cluster: LocalCluster, token: string, path: string, body: unknown): Promise<string> {
  const r = await call(cluster, 'management', 'POST', path, token, body);
  if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.data.id as string;
}

/** An identity with a updb password, ready to log in. */
export async function userWithPassword(
  cluster: LocalCluster,
  adminToken: string,
  name: string,
  password: string,
): Promise<string> {
  const id = await create(cluster, adminToken, '/identities', { name, type: 'User', isAdmin: false });
  await create(cluster, adminToken, '/authenticators', { method: 'updb', identityId: id, username: name, password });
  return id;
}

/** Runs `count` operations on `workers` concurrent workers; completion times (ms since start) in order. */
export async function pool(
  count: number,
  workers: number,
  op: (i: number) => Promise<boolean>,
): Promise<{ seconds: number; latencies: number[]; completions: number[]; errors: number; firstError?: string }> {
  const latencies: number[] = [];
  const completions: number[] = [];
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(workers, count) }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        let ok = false;
        try {
          ok = await op(i);
        } catch (err) {
          firstError ??= (err as Error).message;
        }
        if (!ok) errors++;
        const done = performance.now();
        latencies.push(done - t);
        completions.push(done - started);
      }
    }),
  );
  completions.sort((a, b) => a - b);
  return {
    seconds: (performance.now() - started) / 1000,
    latencies,
    completions,
    errors,
    ...(firstError ? { firstError } : {}),
  };
}

/** CPU ticks (user + system, 1/100 s) of a process, from /proc; undefined when it is gone. */
export function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  } catch {
    return undefined;
  }
}

/** Processes by name (`comm`), e.g. every `postgres` backend on the machine. */
export function pidsNamed(name: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === name) out.push(Number(entry));
    } catch {
      // gone
    }
  }
  return out;
}

export type CpuSnapshot = Map<string, number>;

/**
 * CPU ticks of every cluster process, and of every postgres, redis-server and nats-server process
 * on the machine (shared with whatever else runs: machine-wide, not only this cluster's).
 */
export function cpuSnapshot(cluster: LocalCluster): CpuSnapshot {
  const snap: CpuSnapshot = new Map();
  for (const p of cluster.processes()) {
    const t = p.pid ? cpuTicks(p.pid) : undefined;
    if (t !== undefined) snap.set(`${p.service}#${p.replica}`, t);
  }
  for (const [label, comm] of [
    ['postgres (all, machine-wide)', 'postgres'],
    ['redis-server (machine-wide)', 'redis-server'],
    ['nats-server (machine-wide)', 'nats-server'],
  ] as const) {
    let sum = 0;
    for (const pid of pidsNamed(comm)) sum += cpuTicks(pid) ?? 0;
    snap.set(label, sum);
  }
  snap.set(
    'this bench process (load generator)',
    Math.round((process.cpuUsage().user + process.cpuUsage().system) / 1e4),
  );
  return snap;
}

/**
 * CPU seconds each process spent between two snapshots, and per operation when `operations` is
 * given (ms of CPU per operation). Ticks are 1/100 s (CLK_TCK). Postgres backends that ended in
 * between are not counted.
 */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot, operations?: number) {
  const out: { process: string; cpuSeconds: number; msPerOperation?: number }[] = [];
  for (const [name, end] of after) {
    const start = before.get(name);
    if (start === undefined) continue;
    const cpuSeconds = +(Math.max(0, end - start) / 100).toFixed(2);
    out.push({
      process: name,
      cpuSeconds,
      ...(operations ? { msPerOperation: +((cpuSeconds * 1000) / operations).toFixed(2) } : {}),
    });
  }
  return out;
}

export function formatCpu(cpu: ReturnType<typeof cpuBetween>): string {
  return cpu
    .map((c) => `${c.process} ${c.cpuSeconds} s${c.msPerOperation !== undefined ? ` (${c.msPerOperation} ms/op)` : ''}`)
    .join(', ');
}
