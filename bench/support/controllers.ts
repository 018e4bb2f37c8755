/**
 * The controllers a router benchmark runs against, behind one shape: this controller as `npm start`
 * runs it (apps/standalone/start.mjs, every service in one process, PGlite, its own data dir), this
 * controller's cluster (deploy/local-cluster.ts), and the reference OpenZiti 1.1.9 controller
 * (test/support/ziti-peers.ts). Each serves the Edge APIs over HTTPS and the router control channel
 * on 127.0.0.1. Also here: an edge router enrolled on any of them, as its identity files
 * (`ziti router enroll` when the binary is there, else the `erott` API with CSRs made here — ours only).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LocalCluster } from '../../deploy/local-cluster.ts';
import { makeCsr } from '../../services/pki-enrollment/test/support.ts';
import { type ZitiPeers, fetchCaBundle, freePort, writeRouterConfig } from '../../test/support/ziti-peers.ts';
import { root } from '../common.ts';
import type { EdgeApi } from './edge-api.ts';
import type { SimRouterIdentity } from './sim-router.ts';

export type ControllerKind = 'embedded' | 'cluster' | 'reference';

export interface BenchController {
  kind: ControllerKind;
  label: string;
  /** `https://127.0.0.1:<port>` */
  apiUrl: string;
  /** The CA bundle that verifies its API and control-channel certificates. */
  ca: string;
  /** Its router control endpoint. */
  ctrl: { host: string; port: number };
  adminUsername: string;
  adminPassword: string;
  /** Its processes (name → pid), for CPU and RSS. */
  processes(): { name: string; pid: number | undefined }[];
  /** The warnings and errors it logged so far, counted by message. */
  logNotes(): LogNotes;
  /**
   * How its start went, where this module started it: ms from spawning its process to `/version`
   * and the control port answering, and the steps before the spawn (the reference's `ziti pki` and
   * `ziti controller edge init`). The cluster's is timed by whoever started it.
   */
  startup?: { spawnToFirstAnswerMs: number; beforeSpawnMs?: Record<string, number> };
  stop(): Promise<void>;
}

/** Log records at warning level or above, by level and message (the most frequent first). */
export interface LogNotes {
  warnings: number;
  errors: number;
  messages: { level: 'warn' | 'error'; msg: string; count: number }[];
}

/** One line on what a controller logged at warning level or above (its three most frequent messages); none when nothing. */
export function logNotesLine(label: string, notes: LogNotes): string | undefined {
  if (notes.warnings + notes.errors === 0) return undefined;
  const top = notes.messages
    .slice(0, 3)
    .map((m) => `${m.count}× ${m.level} "${m.msg}"`)
    .join('; ');
  return `${label} logged ${notes.warnings} warnings and ${notes.errors} errors: ${top}`;
}

/** Counts warning and error records in JSON log lines (pino's numeric levels, logrus's names). */
export class LogCounter {
  private readonly counts = new Map<string, { level: 'warn' | 'error'; msg: string; count: number }>();
  private partial = '';

  /** Takes a chunk of a log stream (lines may be split across chunks). */
  push(chunk: string): void {
    const lines = (this.partial + chunk).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  line(line: string): void {
    if (!line.startsWith('{')) return;
    let record: { level?: unknown; msg?: unknown; err?: { message?: unknown }; error?: unknown };
    try {
      record = JSON.parse(line);
    } catch {
      return;
    }
    const l = record.level;
    const level =
      typeof l === 'number'
        ? l >= 50
          ? 'error'
          : l >= 40
            ? 'warn'
            : undefined
        : l === 'error' || l === 'fatal' || l === 'panic'
          ? 'error'
          : l === 'warning' || l === 'warn'
            ? 'warn'
            : undefined;
    if (!level) return;
    const detail = record.err?.message ?? record.error;
    const msg = `${String(record.msg ?? '')}${detail ? ` (${String(detail).slice(0, 160)})` : ''}`;
    const key = `${level}\0${msg}`;
    const seen = this.counts.get(key);
    if (seen) seen.count++;
    else this.counts.set(key, { level, msg, count: 1 });
  }

  notes(limit = 12): LogNotes {
    const all = [...this.counts.values()];
    return {
      warnings: all.filter((x) => x.level === 'warn').reduce((s, x) => s + x.count, 0),
      errors: all.filter((x) => x.level === 'error').reduce((s, x) => s + x.count, 0),
      messages: all.sort((a, b) => b.count - a.count).slice(0, limit),
    };
  }
}

/** Resolves when a TCP connect to 127.0.0.1:`port` succeeds. */
function tcpAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/**
 * `npm start` (node apps/standalone/start.mjs: the bundle of apps/standalone/src/main.ts, the same
 * composition as test/support/embedded.ts) in a process of its own on a fresh data dir, its API and
 * control ports on 127.0.0.1, authentication unlimited (`ZITI_AUTH_RATE_LIMIT=0`: a benchmark logs
 * a thousand identities in from one address). Resolves once `/version` and the control port answer.
 */
export async function startNpmStart(
  options: { env?: Record<string, string>; readyTimeoutMs?: number; nodeArgs?: string[] } = {},
) {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-npm-start-'));
  const [port, ctrlPort] = [await freePort(), await freePort()];
  const adminPassword = `pw-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env))
    if (!k.startsWith('ZITI_') && k !== 'NODE_TLS_REJECT_UNAUTHORIZED' && k !== 'HEALTH_PORT') env[k] = v;
  Object.assign(env, {
    ZITI_DATA_DIR: dataDir,
    ZITI_BIND: '127.0.0.1',
    ZITI_PORT: String(port),
    ZITI_CTRL_PORT: String(ctrlPort),
    ZITI_ADMIN_USERNAME: 'admin',
    ZITI_ADMIN_PASSWORD: adminPassword,
    ZITI_AUTH_RATE_LIMIT: '0',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    LOG_FORMAT: 'json',
    ...options.env,
  });
  const log: Buffer[] = [];
  const counter = new LogCounter();
  const spawnedAt = performance.now();
  // Its own process group: the stop reaches it and nothing else.
  const child: ChildProcess = spawn(process.execPath, [...(options.nodeArgs ?? []), 'apps/standalone/start.mjs'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const onOutput = (c: Buffer) => {
    counter.push(c.toString('utf8'));
    log.push(c);
    if (log.length > 200) log.shift();
  };
  child.stdout!.on('data', onOutput);
  child.stderr!.on('data', onOutput);
  let exit: number | null | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = code ?? (signal ? -1 : null);
      resolve();
    }),
  );
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // gone
    }
  };
  // Interrupted (the process exits without the stop): the controller goes, and its data with it.
  const onExit = () => {
    killGroup('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const stop = async () => {
    process.off('exit', onExit);
    if (exit === undefined) {
      killGroup('SIGTERM');
      const timer = new Promise<void>((r) => setTimeout(r, 15_000).unref());
      await Promise.race([exited, timer]);
      if (exit === undefined) {
        killGroup('SIGKILL');
        await exited;
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const apiUrl = `https://127.0.0.1:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 120_000);
  try {
    for (;;) {
      if (exit !== undefined) throw new Error(`npm start exited (${exit}) before answering`);
      if (Date.now() > deadline) throw new Error('npm start did not answer in time');
      const version = await fetch(`${apiUrl}/edge/client/v1/version`, { signal: AbortSignal.timeout(2_000) })
        .then(async (r) => (await r.arrayBuffer(), r.status))
        .catch(() => 0);
      if (version === 200 && (await tcpAnswers(ctrlPort))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    const tail = Buffer.concat(log).toString('utf8').split('\n').slice(-20).join('\n');
    await stop();
    throw new Error(`${(err as Error).message}\n${tail}`);
  }
  const spawnToFirstAnswerMs = Math.round(performance.now() - spawnedAt);
  const ca = await fetchCaBundle(apiUrl);
  const controller: BenchController = {
    kind: 'embedded',
    label: 'ours: npm start',
    apiUrl,
    ca,
    ctrl: { host: '127.0.0.1', port: ctrlPort },
    adminUsername: 'admin',
    adminPassword,
    processes: () => [{ name: 'npm start (controller)', pid: exit === undefined ? child.pid : undefined }],
    logNotes: () => counter.notes(),
    startup: { spawnToFirstAnswerMs },
    stop,
  };
  return controller;
}

/** The cluster's first gateway and first fabric replica (the cluster is stopped by whoever started it). */
export async function clusterController(cluster: LocalCluster): Promise<BenchController> {
  const ctrlPort = cluster.ctrlPorts()[0]?.port;
  if (!ctrlPort) throw new Error('the cluster runs no fabric replica');
  return {
    kind: 'cluster',
    label: 'ours: cluster',
    apiUrl: cluster.baseUrl,
    ca: await fetchCaBundle(cluster.baseUrl),
    ctrl: { host: '127.0.0.1', port: ctrlPort },
    adminUsername: cluster.adminUsername,
    adminPassword: cluster.adminPassword,
    processes: () => cluster.processes().map((p) => ({ name: `${p.service}#${p.replica}`, pid: p.pid })),
    logNotes: () => {
      // Each process's log file (a shared cluster's files hold what came before this run too).
      const counter = new LogCounter();
      if (existsSync(cluster.logDir))
        for (const f of readdirSync(cluster.logDir).filter((x) => x.endsWith('.log')))
          for (const line of readFileSync(join(cluster.logDir, f), 'utf8').split('\n')) counter.line(line);
      return counter.notes();
    },
    stop: async () => undefined,
  };
}

/** The reference controller (`ziti controller run`, EC PKI), stopped with the peers' cleanup or `stop`. */
export async function referenceController(peers: ZitiPeers): Promise<BenchController> {
  const ref = await peers.startReferenceController({ pkiKeyAlg: 'EC' });
  return {
    kind: 'reference',
    label: 'reference 1.1.9',
    apiUrl: ref.apiUrl,
    ca: ref.caPem,
    ctrl: { host: '127.0.0.1', port: ref.ctrlPort },
    adminUsername: ref.adminUsername,
    adminPassword: ref.adminPassword,
    processes: () => [{ name: 'ziti controller', pid: ref.process.exitStatus() ? undefined : ref.process.pid }],
    logNotes: () => {
      const counter = new LogCounter();
      for (const line of ref.process.logs().split('\n')) counter.line(line);
      return counter.notes();
    },
    startup: {
      spawnToFirstAnswerMs: ref.timings.runMs,
      beforeSpawnMs: { 'ziti pki': ref.timings.pkiMs, 'ziti controller edge init': ref.timings.initMs },
    },
    stop: () => ref.stop(),
  };
}

export interface EnrolledRouter {
  routerId: string;
  name: string;
  identity: SimRouterIdentity;
  /** The port its edge listener advertises (nothing listens on it). */
  edgePort: number;
  /** How it was enrolled. */
  enrolledWith: 'ziti router enroll' | 'erott API';
}

/**
 * An edge router created on `c` and enrolled: with `ziti router enroll` (the real CLI writes the
 * router's cert, key and CA bundle into its config dir, which are read back) when `peers` is given,
 * else through `POST /enroll/erott` with CSRs made here (EC P-256) and the CA bundle from
 * `/.well-known/est/cacerts`.
 */
export async function enrollRouter(
  c: BenchController,
  api: EdgeApi,
  adminToken: string,
  options: { name: string; roleAttributes: string[]; peers?: ZitiPeers },
): Promise<EnrolledRouter> {
  const routerId = await api.create('/edge-routers', adminToken, {
    name: options.name,
    isTunnelerEnabled: false,
    roleAttributes: options.roleAttributes,
  });
  const detail = await api.data('management', `/edge-routers/${routerId}`, { token: adminToken });
  const edgePort = await freePort();
  if (options.peers) {
    const config = writeRouterConfig({
      ctrlEndpoint: `tls:${c.ctrl.host}:${c.ctrl.port}`,
      dir: options.peers.newDir(`router-${c.kind}-${options.name}`),
      edgePort,
    });
    await options.peers.enrollRouter(config, detail.enrollmentJwt as string, { keyAlg: 'EC' });
    const file = (name: string) => readFileSync(join(config.dir, name), 'utf8');
    return {
      routerId,
      name: options.name,
      identity: { cert: file('router.cert'), key: file('router.key'), ca: file('router.cas') },
      edgePort,
      enrolledWith: 'ziti router enroll',
    };
  }
  const [client, server] = await Promise.all([
    makeCsr(`CN=${routerId}`),
    makeCsr(`CN=${routerId}`, [{ type: 'ip', value: '127.0.0.1' }]),
  ]);
  const enrolled = await api.data('client', '/enroll/erott', {
    method: 'POST',
    body: { token: detail.enrollmentToken, clientCsr: client.csrPem, serverCsr: server.csrPem },
  });
  const cert = enrolled.cert as string;
  new X509Certificate(cert); // a certificate came back
  return {
    routerId,
    name: options.name,
    identity: { cert, key: client.keyPem, ca: await fetchCaBundle(c.apiUrl) },
    edgePort,
    enrolledWith: 'erott API',
  };
}
