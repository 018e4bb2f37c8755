/**
 * `npm run bench -- login` (issue 13 a): password logins per second
 * (`POST /edge/client/v1/authenticate?method=password`) at `BENCH_LOGIN_CONNECTIONS` (16)
 * connections through the gateway, rotating over 16 users with updb passwords, for `BENCH_SECONDS`
 * (10) after a `BENCH_WARMUP_SECONDS` (2) warm-up; beside its floor, raw `@node-rs/argon2`
 * verifies per second with auth's parameters in a separate process (bench/argon2-floor.ts) at
 * auth's hash concurrency (ZITI_HASH_CONCURRENCY, default 4), measured in the same run while the
 * cluster is idle. Meanwhile other sessions read `GET /current-identity` at a fixed
 * `BENCH_LOGIN_READ_RATE` (40/s over 4 connections), from a process of their own as other clients
 * would (bench/session-reads.ts): once while idle, once during the login storm; the storm's read
 * p99 must stay within 2× the idle one.
 *
 * The gateway's per-address login rate limit (ZITI_AUTH_RATE_LIMIT, 600/min) would cap a loopback
 * storm at 10/s: this cluster runs with ZITI_AUTH_RATE_LIMIT=0 (when the scenario starts it).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
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
  login,
  machine,
  recordResult,
  root,
  userWithPassword,
  withCluster,
} from './common.ts';
import { cannonResult } from './read.ts';

/**
 * A bench child process: `ready` resolves when it prints `ready` (loaded; or at once for one that
 * never does), `result` with the last JSON line it prints (it must exit with 0).
 */
function child<T>(script: string, args: string[]): { ready: Promise<void>; result: Promise<T> } {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench', script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let signalReady!: () => void;
  const ready = new Promise<void>((resolve) => (signalReady = resolve));
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.startsWith('ready\n')) signalReady();
  });
  const result = new Promise<number | null>((resolve) => proc.once('exit', resolve)).then((code) => {
    signalReady();
    if (code !== 0) throw new Error(`${script} exited with ${code}`);
    return JSON.parse(out.trim().split('\n').at(-1)!) as T;
  });
  return { ready, result };
}

/**
 * `GET /current-identity` by other sessions at `rate` per second over 4 connections, from their own
 * process: `warmup` seconds, then `seconds` measured. Await `ready` before starting what the reads
 * must run beside, so both windows line up.
 */
export function sessionReads(baseUrl: string, rate: number, warmup: number, seconds: number, tokens: string[]) {
  return child<autocannon.Result>('session-reads.ts', [
    baseUrl,
    String(rate),
    String(warmup),
    String(seconds),
    '4',
    tokens.join(','),
  ]);
}

/** Runs bench/argon2-floor.ts in its own process; its JSON line. */
export async function argon2Floor(concurrency: number, seconds: number, warmup: number) {
  return child<{
    verifiesPerSecond: number;
    p50: number;
    p99: number;
    operations: number;
    errors: number;
    concurrency: number;
    params: Record<string, number>;
    rssMiB: number;
  }>('argon2-floor.ts', [String(concurrency), String(seconds), String(warmup)]).result;
}

/** auth's default nice value for its hash threads, read from its config so the two cannot drift. */
export function defaultHashNice(): number {
  const file = join(root, 'services', 'auth', 'src', 'config.ts');
  const m = /ZITI_HASH_NICE: env\.int\((\d+),/.exec(readFileSync(file, 'utf8'));
  if (!m) throw new Error(`login bench: the ZITI_HASH_NICE default was not found in ${file}`);
  return Number(m[1]);
}

export async function benchLogin(
  options: ScenarioOptions & {
    seconds?: number;
    warmupSeconds?: number;
    connections?: number;
    readRate?: number;
  } = {},
) {
  const seconds = options.seconds ?? Number(process.env.BENCH_SECONDS ?? 10);
  const warmup = options.warmupSeconds ?? Number(process.env.BENCH_WARMUP_SECONDS ?? 2);
  const connections = options.connections ?? Number(process.env.BENCH_LOGIN_CONNECTIONS ?? 16);
  const readRate = options.readRate ?? Number(process.env.BENCH_LOGIN_READ_RATE ?? 40);
  const hashConcurrency = Number(process.env.ZITI_HASH_CONCURRENCY ?? 4);
  const hashNice = Number(process.env.ZITI_HASH_NICE ?? defaultHashNice());
  return withCluster(
    options.cluster,
    'login',
    {
      ZITI_AUTH_RATE_LIMIT: '0',
      ZITI_HASH_CONCURRENCY: String(hashConcurrency),
      ...(process.env.ZITI_HASH_NICE ? { ZITI_HASH_NICE: process.env.ZITI_HASH_NICE } : {}),
    },
    async (cluster) => {
      const admin = await adminLogin(cluster);
      const tag = Date.now().toString(36);
      const users = Array.from({ length: 16 }, (_, i) => ({
        username: `bench-login-${tag}-${i}`,
        password: `pw-${tag}-${i}-secret`,
      }));
      for (const u of users) await userWithPassword(cluster, admin, u.username, u.password);
      const readerTokens: string[] = [];
      for (let i = 0; i < 4; i++) {
        const name = `bench-reader-${tag}-${i}`;
        await userWithPassword(cluster, admin, name, `pw-${name}`);
        readerTokens.push(await login(cluster, name, `pw-${name}`));
      }
      const loadAverage1m: Record<string, number> = {};

      // Floor: raw verifies in a separate process while the cluster is idle.
      loadAverage1m.floor = load1();
      const floor = await argon2Floor(hashConcurrency, seconds, warmup);
      console.log(
        `${'floor: raw argon2id verify (own process)'.padEnd(44)} ${String(floor.verifiesPerSecond).padStart(7)} /s     p50 ${floor.p50} ms  p99 ${floor.p99} ms  errors ${floor.errors}  (concurrency ${floor.concurrency})`,
      );

      // One prebuilt request per user: each connection cycles through them, so the users rotate
      // and the load generator does not build a request per login (its CPU shares the machine).
      const loginRequests = users.map((u) => ({
        method: 'POST' as const,
        path: '/edge/client/v1/authenticate?method=password',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: u.username, password: u.password }),
      }));
      const loginRun = (duration: number) =>
        autocannon({ url: cluster.baseUrl, connections, duration, requests: loginRequests });
      // Other sessions' reads come from a process of their own (bench/session-reads.ts), as other
      // clients would: not queued behind the storm's load generator in this event loop.
      const reads = () => sessionReads(cluster.baseUrl, readRate, warmup, seconds, readerTokens);

      // Reads while idle.
      const idle = reads();
      loadAverage1m.idleReads = load1();
      const idleReads = cannonResult(`reads while idle (${readRate}/s, 4 conn)`, await idle.result);

      // The storm, with the same reads beside it: both warm up, then both are measured.
      const beside = reads();
      await beside.ready;
      if (warmup > 0) await loginRun(warmup);
      loadAverage1m.storm = load1();
      const cpuBefore = cpuSnapshot(cluster);
      const storm = await loginRun(seconds);
      const stormReadsRaw = await beside.result;
      // Where the storm's CPU went, per login (the 40/s reads beside it are included).
      const cpu = cpuBetween(cpuBefore, cpuSnapshot(cluster), storm.requests.total);
      const logins = cannonResult(`logins (${connections} connections)`, storm);
      const stormReads = cannonResult(`reads during the login storm`, stormReadsRaw);
      loadAverage1m.afterStorm = load1();
      const rss = clusterRss(cluster);

      const ratio = +(logins.requestsPerSecond / floor.verifiesPerSecond).toFixed(3);
      const readP99Ratio = +(stormReads.latencyP99 / idleReads.latencyP99).toFixed(2);
      const summary = {
        date: new Date().toISOString(),
        scenario: 'login',
        machine: machine(),
        ...gitState(),
        connections,
        durationSeconds: seconds,
        hashConcurrency,
        hashNice: options.cluster ? 'given cluster' : hashNice,
        clusterEnv: options.cluster
          ? 'given'
          : { ZITI_AUTH_RATE_LIMIT: '0', ZITI_HASH_CONCURRENCY: String(hashConcurrency) },
        loadAverage1m,
        floor: { name: 'raw @node-rs/argon2 verify, separate process', ...floor },
        logins,
        idleReads,
        stormReads,
        ratios: { loginsVsFloor: ratio, stormReadP99VsIdle: readP99Ratio },
        cpuDuringStorm: cpu,
        targets: {
          must: 'logins ≥ 40 % of the floor; storm read p99 ≤ 2× idle read p99',
          goal: 'logins ≥ 70 % of the floor',
        },
        met: {
          loginsMust: ratio >= 0.4,
          loginsGoal: ratio >= 0.7,
          readsWithin2x: readP99Ratio <= 2,
        },
        rssMiB: [...rss, { process: 'argon2-floor', pid: undefined, rssMiB: floor.rssMiB }],
      };
      console.log(
        `\nlogins: ${(ratio * 100).toFixed(1)}% of the argon2 floor (must ≥ 40 %, goal ≥ 70 %); reads' p99 during the storm ${readP99Ratio}× idle (must ≤ 2×); hash threads at nice ${summary.hashNice}`,
      );
      console.log(`CPU during the storm: ${formatCpu(cpu)}`);
      console.log(`RSS: ${formatRss(summary.rssMiB)}\n`);
      await recordResult('login', summary, options.record);
      return summary;
    },
  );
}
