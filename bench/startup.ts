/**
 * `npm run bench -- startup` (issue 13, start-up): `npm start` (apps/standalone) from a warm
 * install to the first 200 on `https://127.0.0.1:<port>/edge/client/v1/version`, on a fresh temp
 * ZITI_DATA_DIR (first start) and again on the same data dir (second start), with the RSS of its
 * processes once it answered; and each cluster service from spawn to ready (its `/readyz` on the
 * health port answering 200, as deploy/local-cluster.ts detects it, polled every 100 ms), by
 * stopping it in a running cluster and starting it again. Floor, same run: the express
 * hello-world (bench/baseline-server.ts, also run through tsx) from spawn to its first HTTPS answer.
 * `BENCH_STARTUP_STANDALONE_STARTS` (2), `BENCH_STARTUP_SERVICES` (all five, comma-separated).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServiceName, serviceNames } from '../deploy/local-cluster.ts';
import {
  type ScenarioOptions,
  benchCluster,
  clusterRss,
  formatRss,
  gitState,
  load1,
  machine,
  recordResult,
  root,
  rssMiB,
} from './common.ts';
import { baselineCert, startBaseline } from './read.ts';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** Polls `url` every 50 ms until it answers 200; ms since `since`. */
async function firstAnswer(url: string, since: number, child: ChildProcess, deadlineMs = 180_000): Promise<number> {
  let exited: number | null | undefined;
  child.once('exit', (c) => (exited = c));
  while (performance.now() - since < deadlineMs) {
    if (exited !== undefined) throw new Error(`${url}: the process exited with ${exited} before answering`);
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      await r.arrayBuffer();
      if (r.status === 200) return performance.now() - since;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url}: no answer within ${deadlineMs / 1000} s`);
}

/** Every descendant of `pid` (from /proc), with its command. */
function descendants(pid: number): { pid: number; command: string }[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone
    }
  }
  const out: { pid: number; command: string }[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      let command = '?';
      try {
        command = readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
      } catch {
        // gone
      }
      out.push({ pid: c, command });
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** One `npm start` on `dataDir`: ms to the first /version answer and the RSS of its processes then. */
async function standaloneStart(dataDir: string, label: string) {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ZITI_DATA_DIR: dataDir, ZITI_PORT: String(port) };
  delete env.NODE_TLS_REJECT_UNAUTHORIZED;
  const log = createWriteStream(join(dataDir, '..', `npm-start-${port}.log`));
  const t = performance.now();
  // Its own process group, so the stop reaches npm, the shell and node (and nothing else).
  const child = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    const ms = await firstAnswer(`https://127.0.0.1:${port}/edge/client/v1/version`, t, child);
    const procs = [{ pid: child.pid!, command: 'npm start' }, ...descendants(child.pid!)].map((p) => ({
      ...p,
      rssMiB: rssMiB(p.pid),
    }));
    // `npm start` runs apps/standalone/start.mjs (the bundled main.ts); tsx ran src/main.ts before.
    const controller = procs.find(
      (p) => /standalone\/(start\.mjs|src\/main\.ts)/.test(p.command) && !p.command.startsWith('sh'),
    );
    const r = { label, msToFirstVersion: Math.round(ms), controllerRssMiB: controller?.rssMiB, processes: procs };
    console.log(
      `npm start (${label}): first /version answer after ${r.msToFirstVersion} ms; controller RSS ${r.controllerRssMiB ?? '?'} MiB`,
    );
    return r;
  } finally {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
}

export async function benchStartup(
  options: ScenarioOptions & { standaloneStarts?: number; services?: ServiceName[] } = {},
) {
  const starts = options.standaloneStarts ?? Number(process.env.BENCH_STARTUP_STANDALONE_STARTS ?? 2);
  const services = options.services ??
    (process.env.BENCH_STARTUP_SERVICES?.split(',').map((s) => s.trim()) as ServiceName[] | undefined) ?? [
      ...serviceNames,
    ];
  const loadAverage1m: Record<string, number> = {};

  // Floor: a hello-world server through the same loader (tsx), spawn → first HTTPS answer.
  loadAverage1m.floor = load1();
  const tls = baselineCert();
  const t = performance.now();
  const baseline = await startBaseline('express', tls);
  const floorMs = Math.round(await firstAnswer(`https://127.0.0.1:${baseline.port}/`, t, baseline.child));
  const floorRss = rssMiB(baseline.child.pid);
  baseline.child.kill('SIGTERM');
  console.log(`floor: express hello-world (tsx) spawn → first HTTPS answer ${floorMs} ms; RSS ${floorRss} MiB`);

  // npm start, first and second start on the same data dir.
  const top = mkdtempSync(join(tmpdir(), 'bench-startup-'));
  const dataDir = join(top, 'data');
  const standalone = [];
  try {
    for (let i = 0; i < starts; i++) {
      loadAverage1m[`standalone${i + 1}`] = load1();
      standalone.push(
        await standaloneStart(dataDir, i === 0 ? 'first start (empty data dir)' : `start ${i + 1} (same data dir)`),
      );
    }
  } finally {
    rmSync(top, { recursive: true, force: true });
  }

  // Cluster services, spawn → ready.
  loadAverage1m.cluster = load1();
  const clusterStartedAt = performance.now();
  const cluster = options.cluster ?? (await benchCluster('startup'));
  const wholeClusterMs = options.cluster ? undefined : Math.round(performance.now() - clusterStartedAt);
  const serviceStarts = [];
  try {
    for (const s of services) {
      await cluster.stopService(s);
      const t0 = performance.now();
      await cluster.startService(s, 1);
      const ms = Math.round(performance.now() - t0);
      const proc = cluster.processes().find((p) => p.service === s);
      serviceStarts.push({ service: s, msSpawnToReady: ms, rssMiBAtReady: rssMiB(proc?.pid) });
      console.log(`cluster ${s}: spawn → ready ${ms} ms; RSS ${rssMiB(proc?.pid) ?? '?'} MiB`);
    }
    const rss = clusterRss(cluster);
    const summary = {
      date: new Date().toISOString(),
      scenario: 'startup',
      machine: machine(),
      ...gitState(),
      loadAverage1m,
      floor: { name: 'express hello-world via tsx, spawn → first HTTPS answer', ms: floorMs, rssMiB: floorRss },
      standalone,
      wholeClusterStartMs: wholeClusterMs ?? null,
      serviceStarts,
      ratios: {
        standaloneFirstVsFloor: standalone[0] ? +(standalone[0].msToFirstVersion / floorMs).toFixed(1) : null,
      },
      targets: { goal: 'npm start ≤ 3 s to the first /version answer (was ~17 s)' },
      met: { standaloneLe3s: standalone.length > 0 && standalone.every((s) => s.msToFirstVersion <= 3000) },
      rssMiB: rss,
    };
    console.log(`RSS: ${formatRss(rss)}\n`);
    await recordResult('startup', summary, options.record);
    return summary;
  } finally {
    if (!options.cluster) await cluster.stop();
  }
}
