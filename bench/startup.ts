/**
 * `npm run bench -- startup` (issue 13, start-up): `npm start` (apps/standalone) from a warm
 * install to the first 200 on `https://127.0.0.1:<port>/edge/client/v1/version`, on a fresh temp
 * ZITI_DATA_DIR (first start, right after `start.mjs --prepare` as `npm ci` runs it) and again on
 * the same data dir (second start), with the RSS of its processes once it answered; and each
 * cluster service from spawn to ready (its `/readyz` on the health port answering 200, as
 * deploy/local-cluster.ts detects it, polled every 100 ms), by stopping it in a running cluster and
 * starting it again. Floor, same run: the express
 * hello-world (bench/baseline-server.ts, also run through tsx) from spawn to its first HTTPS answer.
 * Then idle RSS (issue 25): once every service was restarted, the cluster idles
 * `BENCH_STARTUP_IDLE_SECONDS` (30) beside an idle express hello-world run by plain `node` (no
 * loader, as the services run their bundles), the RSS of each read every second: the highest
 * figure and the one at the end of the stretch, each against half of the same figure before issue
 * 25 (`idleRssBefore`).
 * `BENCH_STARTUP_STANDALONE_STARTS` (2), `BENCH_STARTUP_SERVICES` (all six, comma-separated).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ServiceName, serviceNames } from '../deploy/local-cluster.ts';
import { freePort } from '../deploy/ports.ts';
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

/**
 * Idle RSS (MiB) of each cluster service before issue 25, when each ran its TypeScript sources
 * through tsx (`ZITI_CLUSTER_FROM_SOURCES=1` runs them so still): the highest figure of a 60 s idle
 * stretch and the one at its end. Measured by this scenario (`ZITI_CLUSTER_FROM_SOURCES=1
 * BENCH_STARTUP_IDLE_SECONDS=60 npm run bench -- startup`) on 2026-11-27 at 14:35, load 8.5–15,
 * the services running as they did before issue 25; its target is at most half of it.
 */
export const idleRssBefore: Record<Exclude<ServiceName, 'fabric'>, { highest: number; atEnd: number }> = {
  'pki-enrollment': { highest: 194, atEnd: 158 },
  auth: { highest: 230, atEnd: 141 },
  policy: { highest: 186, atEnd: 112 },
  inventory: { highest: 189, atEnd: 112 },
  audit: { highest: 180, atEnd: 109 },
  gateway: { highest: 191, atEnd: 112 },
};

/** An express hello-world over https in plain JavaScript, run by `node` itself (no loader). */
const idleExpressCode = `
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import express from 'express';
const [certFile, keyFile] = process.argv.slice(1);
const app = express();
app.get('/', (_req, res) => res.type('application/json').send('{"data":{"hello":"world"},"meta":{}}'));
const server = createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, app);
server.listen(0, '127.0.0.1', () => process.stdout.write('listening ' + server.address().port + '\\n'));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

/** Spawns the plain-node express hello-world; resolves once it listens. */
async function startIdleExpress(tls: { cert: string; key: string }): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', idleExpressCode, tls.cert, tls.key], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /listening (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the idle express server exited with ${code}`)));
  });
  return { port, child };
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

/**
 * What `npm ci` runs last (its postinstall): `start.mjs --prepare`, the bundle and the template
 * database clusters with a ready copy of each database, which the next first start takes. Run before
 * the first start, so that it is the first start of a fresh install; ms it took.
 */
async function prepareStandalone(): Promise<number> {
  const t = performance.now();
  const child = spawn(process.execPath, ['apps/standalone/start.mjs', '--prepare'], { cwd: root, stdio: 'ignore' });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`start.mjs --prepare exited with ${code}`);
  return Math.round(performance.now() - t);
}

/** One `npm start` on `dataDir`: ms to the first /version answer and the RSS of its processes then. */
async function standaloneStart(dataDir: string, label: string) {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ZITI_DATA_DIR: dataDir,
    ZITI_PORT: String(port),
    ZITI_CTRL_PORT: '0',
  };
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
  options: ScenarioOptions & { standaloneStarts?: number; services?: ServiceName[]; idleSeconds?: number } = {},
) {
  const idleSeconds = options.idleSeconds ?? Number(process.env.BENCH_STARTUP_IDLE_SECONDS ?? 30);
  if (!Number.isFinite(idleSeconds) || idleSeconds < 0 || idleSeconds > 600)
    throw new Error(`BENCH_STARTUP_IDLE_SECONDS: ${idleSeconds} is not a number of seconds from 0 to 600`);
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

  // npm start, first and second start on the same data dir, after what `npm ci` prepares.
  loadAverage1m.prepare = load1();
  const prepareMs = await prepareStandalone();
  console.log(`npm ci's prepare step (start.mjs --prepare): ${prepareMs} ms`);
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

    // Idle: the whole cluster and an idle express server side by side, no traffic; the RSS of each
    // read every second. V8 gives memory back at some point of an idle stretch (its memory reducer),
    // so both the highest figure of the stretch and the one at its end are kept.
    loadAverage1m.idle = load1();
    const idleExpress = await startIdleExpress(tls);
    const samples: ReturnType<typeof clusterRss>[] = [];
    try {
      // The express server answers once (as each service answered its readiness probes), then idles.
      await firstAnswer(`https://127.0.0.1:${idleExpress.port}/`, performance.now(), idleExpress.child);
      const until = performance.now() + idleSeconds * 1000;
      do {
        samples.push(clusterRss(cluster, { express: idleExpress.child.pid }));
        await new Promise((r) => setTimeout(r, Math.max(0, Math.min(1000, until - performance.now()))));
      } while (performance.now() < until);
      samples.push(clusterRss(cluster, { express: idleExpress.child.pid }));
    } finally {
      idleExpress.child.kill('SIGTERM');
    }
    /** Highest and last RSS of the processes whose name starts with `prefix` (the largest replica). */
    const idleOf = (prefix: string) => {
      const of = (sample: ReturnType<typeof clusterRss>) =>
        Math.max(...sample.filter((p) => p.process.startsWith(prefix)).map((p) => p.rssMiB ?? 0));
      const all = samples.map(of).filter((x) => x > 0);
      return all.length > 0 ? { highest: Math.max(...all), atEnd: all.at(-1)! } : undefined;
    };
    const express = idleOf('express');
    const idleServices = serviceNames.map((service) => {
      const rss = idleOf(`${service}#`);
      const before = service === 'fabric' ? undefined : idleRssBefore[service];
      const half = (x: number) => Math.floor(x / 2);
      // fabric came after issue 25: its floor is issue 32's, at most 100 MiB idle for a clustered service.
      const floorMiB = before
        ? { highest: half(before.highest), atEnd: half(before.atEnd) }
        : { highest: 100, atEnd: 100 };
      return {
        service,
        highestMiB: rss?.highest,
        atEndMiB: rss?.atEnd,
        before,
        floorMiB,
        met: {
          highest: rss ? rss.highest <= floorMiB.highest : null,
          atEnd: rss ? rss.atEnd <= floorMiB.atEnd : null,
        },
        vsExpress: rss && express ? +(rss.atEnd / express.atEnd).toFixed(2) : null,
      };
    });
    const verdict = (met: boolean | null) => (met === null ? '?' : met ? 'met' : 'not met');
    for (const s of idleServices)
      console.log(
        `idle ${idleSeconds} s: ${s.service.padEnd(14)} highest ${s.highestMiB ?? '?'} MiB (before ${s.before?.highest ?? '–'}, ≤ ${s.floorMiB.highest}: ${verdict(s.met.highest)}); at the end ${s.atEndMiB ?? '?'} MiB (before ${s.before?.atEnd ?? '–'}, ≤ ${s.floorMiB.atEnd}: ${verdict(s.met.atEnd)}); ${s.vsExpress ?? '?'} × express`,
      );
    console.log(
      `idle ${idleSeconds} s: express hello-world (plain node) highest ${express?.highest ?? '?'} MiB, at the end ${express?.atEnd ?? '?'} MiB`,
    );

    const summary = {
      date: new Date().toISOString(),
      scenario: 'startup',
      machine: machine(),
      ...gitState(),
      loadAverage1m,
      floor: { name: 'express hello-world via tsx, spawn → first HTTPS answer', ms: floorMs, rssMiB: floorRss },
      standalonePrepareMs: prepareMs,
      standalone,
      wholeClusterStartMs: wholeClusterMs ?? null,
      serviceStarts,
      ratios: {
        standaloneFirstVsFloor: standalone[0] ? +(standalone[0].msToFirstVersion / floorMs).toFixed(1) : null,
      },
      targets: { goal: 'npm start ≤ 3 s to the first /version answer (was ~17 s)' },
      met: { standaloneLe3s: standalone.length > 0 && standalone.every((s) => s.msToFirstVersion <= 3000) },
      rssMiB: rss,
      idle: {
        seconds: idleSeconds,
        runner: cluster.bundleDir ? 'bundles' : 'sources through tsx',
        express,
        services: idleServices,
        floor:
          'each service ≤ half of its idle RSS before issue 25 (idleRssBefore), highest of the stretch and at its end',
        met: {
          highest: idleServices.every((s) => s.met.highest !== false),
          atEnd: idleServices.every((s) => s.met.atEnd !== false),
        },
        samples: samples.at(-1),
      },
    };
    console.log(`RSS: ${formatRss(rss)}\n`);
    await recordResult('startup', summary, options.record);
    return summary;
  } finally {
    if (!options.cluster) await cluster.stop();
  }
}
