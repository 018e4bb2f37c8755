/**
 * Test peers: the real OpenZiti 1.1.9 programs (one `ziti` binary) driven from tests, so that our
 * controller can be checked against what a real router, hosting SDK and dialing SDK do, and so that
 * the reference controller can be run beside ours (benchmarks, differential tests).
 *
 * What is here
 * - `findZiti()` / `describeWithZiti()`: locate the binary (ZITI_BIN, else the install-ziti cache,
 *   else `tools/test-peers/install-ziti`), check that it says v1.1.9, and skip a suite with one line
 *   when it is absent.
 * - `createZitiPeers()`: a scope for one test run: its own temp dir (mkdtemp), every process it
 *   starts (each in its own process group) and every server; `cleanup()` kills them all (SIGTERM,
 *   then SIGKILL) and removes the dir. A watchdog process kills the groups if the test process dies
 *   without cleaning up (even by SIGKILL), so no orphan survives a failed or aborted run.
 * - `peers.startReferenceController()`: the reference controller (`ziti controller run`) with a PKI
 *   made by `ziti pki`, a config written here (keys as in the reference's
 *   `ziti/cmd/create/config_templates/controller.yml`, every address 127.0.0.1) and the admin made by
 *   `ziti controller edge init`.
 * - Controller-agnostic helpers that speak only the Edge Management API over HTTPS (work against
 *   the reference and against ours): `adminLogin()` → `EdgeAdmin` with `createEdgeRouter`,
 *   `createIdentity`, `createConfig`, `createService`, the policies, `waitForRouterOnline`,
 *   `waitForTerminator`, and `createHostedService` (all of it for one echo-style service).
 * - Router: `writeRouterConfig()` (a 1.1.9 edge router config, loopback only, no tunnel binding),
 *   `peers.enrollRouter()`, `peers.runRouter()`, or `peers.startRouter()` for all of it.
 * - SDKs: `peers.enrollIdentity()` (`ziti edge enroll`), `peers.runTunnelHost()` (`ziti tunnel host`,
 *   the hosting SDK) and `peers.zcat()` (`ziti demo zcat`, the dialing SDK), `peers.startEchoServer()`.
 * - Observation: `peers.startApiRecorder()` (a TLS proxy in front of the Edge Client API that records
 *   every call an SDK makes), `peers.listeners()` (every socket our processes listen on, from /proc).
 *
 * Loopback only: every listener these programs open binds 127.0.0.1. `ziti tunnel host` opens none
 * (its DNS resolver is off in host mode unless `--resolver` is given; its CLI agent is turned off
 * here); `ziti demo zcat` opens none; the CLI agent (a unix socket) of controller and router is off.
 * `ziti tunnel proxy` (always 0.0.0.0) and the router's built-in tunneler are not used.
 *
 * Environment of every child: the inherited environment without ZITI_* and *_PROXY variables, with
 * HOME and ZITI_CONFIG_DIR inside the run's dir (the CLI keeps its logins under
 * `$ZITI_CONFIG_DIR`, default `~/.config/ziti`), ZITI_CHECK_VERSION=false (no GitHub release check)
 * and NO_PROXY for loopback. Nothing is downloaded.
 *
 * Logs: every process writes stdout and stderr to `<dir>/<name>.log` (JSON lines from logrus when
 * not on a terminal); `tail()` formats the last lines; errors thrown by this module carry the step
 * that failed and the last log lines of the process involved. ZITI_PEERS_KEEP=1 keeps the dir after
 * cleanup (its path is printed) for a post-mortem.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import { type AddressInfo, type Server, type Socket, connect as netConnect, createServer } from 'node:net';
import { freePort } from '../../deploy/ports.ts';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { describe, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { type HttpResponse, createHttpClient } from './http.ts';
import { certificatesFromPkcs7Base64 } from './pkcs7.ts';

/** The OpenZiti release these peers are. */
export const ZITI_VERSION = 'v1.1.9';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const installScript = join(repoRoot, 'tools', 'test-peers', 'install-ziti');

// ---------------------------------------------------------------------------------------------
// Finding the binary
// ---------------------------------------------------------------------------------------------

/** Where the binary is (and its version), or one line saying why it cannot be had. */
export type ZitiLookup = { path: string; version: string } | { skipped: string };

let lookup: ZitiLookup | undefined;

function versionOf(path: string): string | undefined {
  const r = spawnSync(path, ['version'], { encoding: 'utf8', timeout: 20_000, env: childEnv(tmpdir()) });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function checked(path: string, source: string): ZitiLookup {
  if (!existsSync(path)) return { skipped: `${source} ${path} does not exist` };
  const version = versionOf(path);
  if (version !== ZITI_VERSION) {
    return { skipped: `${source} ${path}: 'ziti version' says '${version ?? '(failed)'}', not ${ZITI_VERSION}` };
  }
  return { path, version };
}

/**
 * Finds the reference `ziti` binary: `$ZITI_BIN` if set (and then only it), else the cache that
 * `tools/test-peers/install-ziti` fills (`${ZITI_PEERS_CACHE:-~/.cache/ziti-peers}/v1.1.9/bin/ziti`),
 * else runs install-ziti (which builds it with Go where the module proxy serves openziti, and fails
 * fast where it does not; ZITI_PEERS_NO_INSTALL=1 skips this step, ZITI_PEERS_INSTALL_TIMEOUT_MS
 * bounds it, default 20 minutes). Each candidate must say `v1.1.9` to `ziti version`. The answer is
 * memoized for the process.
 */
export function findZiti(): ZitiLookup {
  if (lookup) return lookup;
  lookup = locate();
  return lookup;
}

function locate(): ZitiLookup {
  const fromEnv = process.env.ZITI_BIN;
  if (fromEnv) return checked(fromEnv, 'ZITI_BIN');
  const cache = process.env.ZITI_PEERS_CACHE || join(homedir(), '.cache', 'ziti-peers');
  const cached = join(cache, ZITI_VERSION, 'bin', 'ziti');
  if (existsSync(cached)) {
    const found = checked(cached, 'cached');
    if ('path' in found) return found;
  }
  if (process.env.ZITI_PEERS_NO_INSTALL === '1') {
    return { skipped: `no ziti ${ZITI_VERSION} at ${cached} (ZITI_BIN unset; ZITI_PEERS_NO_INSTALL=1)` };
  }
  if (!existsSync(installScript)) return { skipped: `no ziti ${ZITI_VERSION} at ${cached} and no ${installScript}` };
  const r = spawnSync(installScript, [], {
    encoding: 'utf8',
    timeout: Number(process.env.ZITI_PEERS_INSTALL_TIMEOUT_MS ?? 20 * 60_000),
    env: { ...process.env, ZITI_PEERS_CACHE: cache },
  });
  if (r.status !== 0) {
    // Its own last reason line, and the HTTP status or network error that caused it when there is one.
    const lines = `${r.stderr ?? ''}`.split('\n').map((l) => l.trim());
    const reason = lines
      .filter((l) => l.startsWith('install-ziti:') && !/install-ziti: building/.test(l))
      .pop()
      ?.replace(/^install-ziti:\s*/, '')
      .replace(/:$/, '');
    const cause = lines
      .map((l) => /\b(?:403 Forbidden|404 Not Found|410 Gone|dial tcp.*|no such host.*|i\/o timeout)/.exec(l)?.[0])
      .find(Boolean);
    const why = [reason ?? r.error?.message ?? `exit ${r.status}`, cause].filter(Boolean).join(' — ');
    return { skipped: `install-ziti failed: ${why}`.slice(0, 300) };
  }
  return checked(r.stdout.trim().split('\n').pop() ?? cached, 'install-ziti built');
}

const skipNotices = new Set<string>();

/**
 * `describe` when the binary is there (`fn` gets its path), else a skipped suite and exactly one
 * console line: `[ziti-peers] skipped "<name>": <reason>`.
 */
export function describeWithZiti(name: string, fn: (ziti: { path: string; version: string }) => void): void {
  const found = findZiti();
  if ('skipped' in found) {
    if (!skipNotices.has(name)) {
      skipNotices.add(name);
      console.log(`[ziti-peers] skipped "${name}": ${found.skipped}`);
    }
    describe.skip(name, () => {
      it(`needs ziti ${ZITI_VERSION}`, () => {});
    });
    return;
  }
  describe(name, () => fn(found));
}

// ---------------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------------

/** A port free on 127.0.0.1 (deploy/ports.ts: below the ephemeral range, never the same one twice per process). */
export { freePort };

/** An error from a peer step: what failed, why, and the last log lines of the processes involved. */
export class ZitiPeerError extends Error {
  constructor(step: string, detail: string, processes: readonly ZitiProcess[] = [], tailLines = 25) {
    const logs = processes
      .map((p) => `--- last lines of ${p.name} (pid ${p.pid}, ${p.logFile}) ---\n${p.tail(tailLines)}`)
      .join('\n');
    super(`${step}: ${detail}${logs ? `\n${logs}` : ''}`);
    this.name = 'ZitiPeerError';
  }
}

/**
 * Polls `check` until it returns something other than undefined/false/null, or the deadline passes
 * (then throws a ZitiPeerError naming `what`, the last value or error seen, and the log tails of
 * `processes`). Fails at once when one of `processes` exits.
 */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  options: {
    timeoutMs?: number;
    intervalMs?: number;
    processes?: readonly ZitiProcess[];
    /** What was last seen, for the timeout's message (default: the last value or error). */
    describeLast?: () => string;
  } = {},
): Promise<T> {
  const { timeoutMs = 20_000, intervalMs = 50, processes = [] } = options;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== null && value !== false) return value as T;
      last = value;
    } catch (error) {
      last = error;
    }
    const dead = processes.find((p) => p.exitStatus());
    if (dead) {
      throw new ZitiPeerError(what, `${dead.name} exited (${describeExit(dead.exitStatus()!)})`, processes);
    }
    if (Date.now() > deadline) {
      const seen = options.describeLast?.() ?? (last instanceof Error ? last.message : JSON.stringify(last));
      throw new ZitiPeerError(what, `not true after ${timeoutMs} ms (last: ${seen})`, processes);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** One log line made readable: logrus JSON becomes `hh:mm:ss.mmm level msg key=value…`. */
export function formatLogLine(line: string, max = 400): string {
  if (!line.startsWith('{')) return line.slice(0, max);
  try {
    const j = JSON.parse(line) as Record<string, unknown>;
    const { time, level, msg, file: _file, func: _func, ...rest } = j;
    const fields = Object.entries(rest)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    const t = typeof time === 'string' ? time.slice(11, 23) : '';
    const text = `${t} ${String(level ?? '')} ${String(msg ?? '')}${fields ? ` ${fields}` : ''}`;
    return text.replace(/\s*\n\s*/g, ' ').slice(0, max);
  } catch {
    return line.slice(0, max);
  }
}

/** The environment of every child (see the file comment). */
function childEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('ZITI_') || /^(https?|all|no)_proxy$/i.test(k)) continue;
    env[k] = v;
  }
  return {
    ...env,
    HOME: home,
    ZITI_CONFIG_DIR: join(home, '.config', 'ziti'),
    ZITI_CHECK_VERSION: 'false',
    NO_PROXY: '127.0.0.1,localhost,::1',
    no_proxy: '127.0.0.1,localhost,::1',
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Resolves with undefined after `ms` (the losing side of a race against an exit; never keeps the process alive). */
function deadline(ms: number): Promise<undefined> {
  return new Promise((r) => setTimeout(() => r(undefined), ms).unref());
}

function describeExit(e: ProcessExit): string {
  return e.signal ? `signal ${e.signal}` : `code ${e.code}`;
}

/** A started program: its own process group, its output in `logFile`. */
export interface ZitiProcess {
  readonly name: string;
  readonly pid: number;
  readonly args: readonly string[];
  readonly logFile: string;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<ProcessExit>;
  /** The exit, once it happened. */
  exitStatus(): ProcessExit | undefined;
  /** The whole log so far. */
  logs(): string;
  /** The last `lines` log lines, formatted. */
  tail(lines?: number): string;
  /**
   * Waits for a log line matching `pattern` (searching from byte `from`, default: the start), with a
   * deadline; fails at once if the process exits. Returns the line and the offset after it.
   */
  waitForLog(
    pattern: RegExp | string,
    options?: { timeoutMs?: number; from?: number },
  ): Promise<{ line: string; offset: number }>;
  /** The log's current size in bytes (a `from` for waitForLog). */
  logOffset(): number;
  /**
   * Sends `signal` (default SIGTERM) to the process group, waits up to `graceMs` (default 5 s) and
   * then SIGKILLs the group; resolves with the exit. SIGKILL waits for the exit only.
   */
  kill(signal?: NodeJS.Signals, graceMs?: number): Promise<ProcessExit>;
}

const live = new Map<number, ZitiProcess>();
/** Run dirs to remove if the test process dies without cleaning up. */
const orphanDirs = new Set<string>();
let watchdogList: string | undefined;

/**
 * One watchdog per test process: a detached node process that reads a pipe from us until it ends
 * (we died, however: even SIGKILL closes the pipe), then SIGKILLs every process group still listed
 * in its file (`pgid <n>` lines) and removes the run dirs listed there (`dir <path>` lines).
 */
function ensureWatchdog(): void {
  if (watchdogList) return;
  watchdogList = join(tmpdir(), `ziti-peers-watchdog-${process.pid}-${randomBytes(3).toString('hex')}.list`);
  writeFileSync(watchdogList, '');
  const script =
    "const fs=require('fs');process.stdin.resume();process.stdin.on('end',()=>{let t='';" +
    "try{t=fs.readFileSync(process.argv[1],'utf8')}catch{}const l=t.split('\\n');" +
    "for(const x of l){if(x.startsWith('pgid ')){try{process.kill(-Number(x.slice(5)),'SIGKILL')}catch{}}}" +
    "for(const x of l){if(x.startsWith('dir ')){try{fs.rmSync(x.slice(4),{recursive:true,force:true})}catch{}}}" +
    'try{fs.rmSync(process.argv[1])}catch{}process.exit(0)});';
  const dog = spawn(process.execPath, ['-e', script, watchdogList], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  dog.unref();
  (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  process.once('exit', () => {
    for (const pgid of live.keys()) killGroup(pgid, 'SIGKILL');
  });
}

function syncWatchdog(): void {
  if (!watchdogList) return;
  const lines = [...[...live.keys()].map((p) => `pgid ${p}`), ...[...orphanDirs].map((d) => `dir ${d}`)];
  writeFileSync(watchdogList, lines.map((l) => `${l}\n`).join(''));
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

interface SpawnOptions {
  cwd: string;
  home: string;
  env?: Record<string, string>;
  /** Pipe stdin/stdout instead of sending them to the log (zcat). */
  pipeStdio?: boolean;
}

function spawnZiti(
  name: string,
  command: string,
  args: string[],
  logFile: string,
  options: SpawnOptions,
): ZitiProcess & { child: ChildProcess } {
  ensureWatchdog();
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      cwd: options.cwd,
      env: childEnv(options.home, options.env),
      detached: true,
      stdio: options.pipeStdio ? ['pipe', 'pipe', 'pipe'] : ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  if (child.pid === undefined) throw new ZitiPeerError(`start ${name}`, `could not spawn ${command}`);
  const pid = child.pid;
  let status: ProcessExit | undefined;
  const exited = new Promise<ProcessExit>((resolveExit) => {
    child.once('exit', (code, signal) => {
      status = { code, signal };
      // Stragglers in the group (the leader is gone; its children may not be).
      killGroup(pid, 'SIGKILL');
      live.delete(pid);
      syncWatchdog();
      resolveExit(status);
    });
    child.once('error', () => {
      status ??= { code: null, signal: null };
      live.delete(pid);
      syncWatchdog();
      resolveExit(status);
    });
  });
  const logs = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  const proc: ZitiProcess & { child: ChildProcess } = {
    name,
    pid,
    args,
    logFile,
    exited,
    child,
    exitStatus: () => status,
    logs,
    logOffset: () => Buffer.byteLength(logs()),
    tail: (lines = 25) =>
      logs()
        .split('\n')
        .filter((l) => l.trim())
        .slice(-lines)
        .map((l) => formatLogLine(l))
        .join('\n'),
    async waitForLog(pattern, opts = {}) {
      const re = typeof pattern === 'string' ? new RegExp(pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : pattern;
      const from = opts.from ?? 0;
      return waitUntil(
        `${name}: log line ${re}`,
        () => {
          const text = Buffer.from(logs()).subarray(from).toString('utf8');
          let offset = from;
          for (const line of text.split('\n')) {
            offset += Buffer.byteLength(line) + 1;
            if (re.test(line)) return { line, offset };
          }
          return undefined;
        },
        { timeoutMs: opts.timeoutMs ?? 20_000, processes: [proc] },
      );
    },
    async kill(signal = 'SIGTERM', graceMs = 5_000) {
      if (status) return status;
      killGroup(pid, signal);
      if (signal !== 'SIGKILL') {
        const timer = deadline(graceMs);
        if (!(await Promise.race([exited, timer]))) killGroup(pid, 'SIGKILL');
      }
      return exited;
    },
  };
  live.set(pid, proc);
  syncWatchdog();
  return proc;
}

// ---------------------------------------------------------------------------------------------
// Edge Management API (controller-agnostic)
// ---------------------------------------------------------------------------------------------

const MANAGEMENT = '/edge/management/v1';

/** An Edge Management API call that did not answer as expected. */
export class EdgeApiError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${path} answered ${status}: ${body.slice(0, 800)}`);
    this.name = 'EdgeApiError';
  }
}

/**
 * Fetches the controller's CA bundle from `/.well-known/est/cacerts` without verifying the server
 * (trust on first use, as `ziti edge login -y` does). Prefer passing the CA you know.
 */
export async function fetchCaBundle(apiUrl: string): Promise<string> {
  const res = await createHttpClient(apiUrl, undefined)({ path: '/.well-known/est/cacerts' });
  if (res.status !== 200) throw new EdgeApiError('GET', '/.well-known/est/cacerts', res.status, res.text);
  return certificatesFromPkcs7Base64(res.text).join('');
}

export interface RouterDetail {
  id: string;
  name: string;
  isOnline: boolean;
  isVerified?: boolean;
  enrollmentJwt?: string | null;
  supportedProtocols?: Record<string, string>;
  syncStatus?: string;
  fingerprint?: string;
  hostname?: string;
  versionInfo?: Record<string, string>;
  [key: string]: unknown;
}

export interface TerminatorDetail {
  id: string;
  serviceId: string;
  routerId: string;
  binding: string;
  address: string;
  identity: string;
  cost: number;
  precedence: string;
  [key: string]: unknown;
}

/** What `createHostedService` made. */
export interface HostedService {
  serviceId: string;
  serviceName: string;
  hostConfigId: string;
  interceptConfigId: string;
  bindPolicyId: string;
  dialPolicyId: string;
  edgeRouterPolicyId: string;
  serviceEdgeRouterPolicyId: string;
}

/** A logged-in admin on one controller's Edge Management API (any controller: the reference or ours). */
export class EdgeAdmin {
  private readonly http: ReturnType<typeof createHttpClient>;

  constructor(
    readonly apiUrl: string,
    readonly ca: string,
    readonly token: string,
  ) {
    this.http = createHttpClient(apiUrl, ca);
  }

  /** Sends a request to `/edge/management/v1<path>` with the session token. */
  request(method: string, path: string, body?: unknown): Promise<HttpResponse> {
    return this.http({ method, path: `${MANAGEMENT}${path}`, headers: { 'zt-session': this.token }, body });
  }

  /** Like `request`, but throws an EdgeApiError unless the status is one of `expect`; returns `data`. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- API bodies are inspected freely
  async call(method: string, path: string, body?: unknown, expect: number[] = [200, 201]): Promise<any> {
    const res = await this.request(method, path, body);
    if (!expect.includes(res.status)) throw new EdgeApiError(method, `${MANAGEMENT}${path}`, res.status, res.text);
    return res.json?.data;
  }

  private async create(path: string, body: Record<string, unknown>): Promise<string> {
    const data = await this.call('POST', path, body, [201]);
    return data.id as string;
  }

  /** POST /edge-routers (tunneler off by default); returns its id, name and enrollment JWT. */
  async createEdgeRouter(
    options: { name?: string; roleAttributes?: string[]; isTunnelerEnabled?: boolean; cost?: number } = {},
  ): Promise<{ id: string; name: string; enrollmentJwt: string }> {
    const name = options.name ?? uniqueName('router');
    const id = await this.create('/edge-routers', {
      name,
      isTunnelerEnabled: options.isTunnelerEnabled ?? false,
      roleAttributes: options.roleAttributes ?? [],
      ...(options.cost !== undefined ? { cost: options.cost } : {}),
    });
    const detail = await this.getEdgeRouter(id);
    if (!detail.enrollmentJwt) throw new EdgeApiError('GET', `/edge-routers/${id}`, 200, 'no enrollmentJwt');
    return { id, name, enrollmentJwt: detail.enrollmentJwt };
  }

  getEdgeRouter(id: string): Promise<RouterDetail> {
    return this.call('GET', `/edge-routers/${encodeURIComponent(id)}`);
  }

  /** Polls GET /edge-routers/<id> until `isOnline` is `online`; returns the detail and how long it took. */
  async waitForRouterOnline(
    id: string,
    online = true,
    options: { timeoutMs?: number; intervalMs?: number; processes?: readonly ZitiProcess[] } = {},
  ): Promise<{ router: RouterDetail; ms: number }> {
    const started = Date.now();
    let seen: RouterDetail | undefined;
    const router = await waitUntil(
      `edge router ${id} isOnline=${online}`,
      async () => {
        seen = await this.getEdgeRouter(id);
        return seen.isOnline === online ? seen : undefined;
      },
      {
        timeoutMs: 20_000,
        describeLast: () =>
          seen ? `isOnline=${seen.isOnline} isVerified=${seen.isVerified} syncStatus=${seen.syncStatus}` : 'no answer',
        ...options,
      },
    );
    return { router, ms: Date.now() - started };
  }

  /** POST /identities with an OTT enrollment; returns its id, name and enrollment JWT. */
  async createIdentity(
    options: { name?: string; roleAttributes?: string[]; type?: string; isAdmin?: boolean } = {},
  ): Promise<{ id: string; name: string; enrollmentJwt: string }> {
    const name = options.name ?? uniqueName('identity');
    const id = await this.create('/identities', {
      name,
      type: options.type ?? 'Device',
      isAdmin: options.isAdmin ?? false,
      roleAttributes: options.roleAttributes ?? [],
      enrollment: { ott: true },
    });
    const detail = await this.call('GET', `/identities/${encodeURIComponent(id)}`);
    const jwt = detail?.enrollment?.ott?.jwt as string | undefined;
    if (!jwt) throw new EdgeApiError('GET', `/identities/${id}`, 200, 'no enrollment.ott.jwt');
    return { id, name, enrollmentJwt: jwt };
  }

  /** The id of the config type called `name` (e.g. host.v1, intercept.v1). */
  async configTypeId(name: string): Promise<string> {
    const data = await this.call('GET', `/config-types?filter=${encodeURIComponent(`name="${name}"`)}`);
    const id = (data as { id: string }[])[0]?.id;
    if (!id) throw new EdgeApiError('GET', '/config-types', 200, `no config type ${name}`);
    return id;
  }

  async createConfig(options: { name?: string; type: string; data: Record<string, unknown> }): Promise<string> {
    return this.create('/configs', {
      name: options.name ?? uniqueName(options.type),
      configTypeId: await this.configTypeId(options.type),
      data: options.data,
    });
  }

  async createService(options: {
    name?: string;
    configs?: string[];
    roleAttributes?: string[];
    encryptionRequired?: boolean;
    terminatorStrategy?: string;
  }): Promise<{ id: string; name: string }> {
    const name = options.name ?? uniqueName('service');
    const id = await this.create('/services', {
      name,
      configs: options.configs ?? [],
      roleAttributes: options.roleAttributes ?? [],
      encryptionRequired: options.encryptionRequired ?? true,
      ...(options.terminatorStrategy ? { terminatorStrategy: options.terminatorStrategy } : {}),
    });
    return { id, name };
  }

  createServicePolicy(options: {
    name?: string;
    type: 'Bind' | 'Dial';
    identityRoles: string[];
    serviceRoles: string[];
    semantic?: 'AnyOf' | 'AllOf';
  }): Promise<string> {
    return this.create('/service-policies', {
      name: options.name ?? uniqueName(`sp-${options.type.toLowerCase()}`),
      type: options.type,
      semantic: options.semantic ?? 'AnyOf',
      identityRoles: options.identityRoles,
      serviceRoles: options.serviceRoles,
    });
  }

  createEdgeRouterPolicy(options: {
    name?: string;
    identityRoles: string[];
    edgeRouterRoles: string[];
    semantic?: 'AnyOf' | 'AllOf';
  }): Promise<string> {
    return this.create('/edge-router-policies', {
      name: options.name ?? uniqueName('erp'),
      semantic: options.semantic ?? 'AnyOf',
      identityRoles: options.identityRoles,
      edgeRouterRoles: options.edgeRouterRoles,
    });
  }

  createServiceEdgeRouterPolicy(options: {
    name?: string;
    serviceRoles: string[];
    edgeRouterRoles: string[];
    semantic?: 'AnyOf' | 'AllOf';
  }): Promise<string> {
    return this.create('/service-edge-router-policies', {
      name: options.name ?? uniqueName('serp'),
      semantic: options.semantic ?? 'AnyOf',
      serviceRoles: options.serviceRoles,
      edgeRouterRoles: options.edgeRouterRoles,
    });
  }

  /** GET /terminators?filter=service="<id>". */
  listTerminators(serviceId: string): Promise<TerminatorDetail[]> {
    return this.call('GET', `/terminators?filter=${encodeURIComponent(`service="${serviceId}"`)}`);
  }

  /** Polls the service's terminators until there are at least `count`; returns them and how long it took. */
  async waitForTerminator(
    serviceId: string,
    options: { count?: number; timeoutMs?: number; processes?: readonly ZitiProcess[] } = {},
  ): Promise<{ terminators: TerminatorDetail[]; ms: number }> {
    const started = Date.now();
    const count = options.count ?? 1;
    let seen: number | undefined;
    const terminators = await waitUntil(
      `a terminator for service ${serviceId}`,
      async () => {
        const list = await this.listTerminators(serviceId);
        seen = list.length;
        return list.length >= count ? list : undefined;
      },
      {
        timeoutMs: options.timeoutMs ?? 30_000,
        processes: options.processes ?? [],
        describeLast: () => (seen === undefined ? 'no answer' : `${seen} terminator(s)`),
      },
    );
    return { terminators, ms: Date.now() - started };
  }

  /**
   * Everything for one tunneler-hosted TCP service: host.v1 → `target`, intercept.v1 (tcp,
   * `interceptAddress`:`interceptPort`, unused by zcat but what tunnelers expect), the service, a Bind
   * policy for the hosts, a Dial policy for the clients, an edge-router policy giving both the
   * routers, and a service-edge-router policy. Roles are `@id` unless given as `#attribute`.
   */
  async createHostedService(options: {
    name?: string;
    target: { address: string; port: number; protocol?: 'tcp' | 'udp' };
    hostIdentityIds: string[];
    clientIdentityIds: string[];
    edgeRouterIds: string[];
    interceptAddress?: string;
    interceptPort?: number;
    encryptionRequired?: boolean;
    /**
     * The routers the clients may use, when not the hosts' (`edgeRouterIds`): a client then reaches
     * the service over links between routers.
     */
    clientEdgeRouterIds?: string[];
  }): Promise<HostedService> {
    const name = options.name ?? uniqueName('svc');
    const role = (x: string) => (x.startsWith('#') ? x : `@${x}`);
    const hostConfigId = await this.createConfig({
      name: `${name}.host.v1`,
      type: 'host.v1',
      data: { protocol: options.target.protocol ?? 'tcp', address: options.target.address, port: options.target.port },
    });
    const interceptConfigId = await this.createConfig({
      name: `${name}.intercept.v1`,
      type: 'intercept.v1',
      data: {
        protocols: [options.target.protocol ?? 'tcp'],
        addresses: [options.interceptAddress ?? `${name}.ziti`],
        portRanges: [{ low: options.interceptPort ?? 7, high: options.interceptPort ?? 7 }],
      },
    });
    const service = await this.createService({
      name,
      configs: [hostConfigId, interceptConfigId],
      encryptionRequired: options.encryptionRequired ?? true,
    });
    const serviceRoles = [`@${service.id}`];
    const bindPolicyId = await this.createServicePolicy({
      name: `${name}.bind`,
      type: 'Bind',
      identityRoles: options.hostIdentityIds.map(role),
      serviceRoles,
    });
    const dialPolicyId = await this.createServicePolicy({
      name: `${name}.dial`,
      type: 'Dial',
      identityRoles: options.clientIdentityIds.map(role),
      serviceRoles,
    });
    const clientRouters = options.clientEdgeRouterIds;
    const edgeRouterPolicyId = await this.createEdgeRouterPolicy({
      name: `${name}.erp`,
      identityRoles: [...options.hostIdentityIds, ...(clientRouters ? [] : options.clientIdentityIds)].map(role),
      edgeRouterRoles: options.edgeRouterIds.map(role),
    });
    if (clientRouters)
      await this.createEdgeRouterPolicy({
        name: `${name}.clients.erp`,
        identityRoles: options.clientIdentityIds.map(role),
        edgeRouterRoles: clientRouters.map(role),
      });
    const serviceEdgeRouterPolicyId = await this.createServiceEdgeRouterPolicy({
      name: `${name}.serp`,
      serviceRoles,
      edgeRouterRoles: [...new Set([...options.edgeRouterIds, ...(clientRouters ?? [])])].map(role),
    });
    return {
      serviceId: service.id,
      serviceName: name,
      hostConfigId,
      interceptConfigId,
      bindPolicyId,
      dialPolicyId,
      edgeRouterPolicyId,
      serviceEdgeRouterPolicyId,
    };
  }
}

/**
 * `POST /edge/management/v1/authenticate?method=password` on any controller; `ca` is the PEM bundle
 * to trust (default: fetched from `/.well-known/est/cacerts`, trust on first use).
 */
export async function adminLogin(
  apiUrl: string,
  username: string,
  password: string,
  options: { ca?: string } = {},
): Promise<EdgeAdmin> {
  const ca = options.ca ?? (await fetchCaBundle(apiUrl));
  const res = await createHttpClient(
    apiUrl,
    ca,
  )({
    method: 'POST',
    path: `${MANAGEMENT}/authenticate?method=password`,
    body: { username, password },
  });
  const token = res.json?.data?.token as string | undefined;
  if (res.status !== 200 || !token) {
    throw new EdgeApiError('POST', `${MANAGEMENT}/authenticate?method=password`, res.status, res.text);
  }
  return new EdgeAdmin(apiUrl, ca, token);
}

function uniqueName(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

// ---------------------------------------------------------------------------------------------
// Router configuration
// ---------------------------------------------------------------------------------------------

export interface RouterConfigOptions {
  /** The controller's control-channel endpoint, e.g. `tls:127.0.0.1:6262`. */
  ctrlEndpoint: string;
  /** Directory for the config, identity files and the router's cached data model. */
  dir: string;
  /** Port of the `edge` listener (SDKs connect here); it binds and advertises 127.0.0.1:<port>. */
  edgePort: number;
  /** Port of a link listener (router-to-router) on 127.0.0.1; none when absent (a private router). */
  linkPort?: number;
  /**
   * Link groups (the router's default is `default`): a dialer dials a peer's listener only when
   * they share a group, so a test can shape the topology (a line A–B–C).
   */
  linkGroups?: { dialer?: string[]; listener?: string[] };
  /** How often the router reports its metrics (link latencies among them) to the controller; its default is 1m. */
  metricsReportInterval?: string;
  /** Port of the health-checks web API on 127.0.0.1; no web listener when absent. */
  healthPort?: number;
  /** Config file name inside `dir` (default router.yaml). */
  fileName?: string;
}

export interface RouterConfigFile {
  configPath: string;
  dir: string;
  ctrlEndpoint: string;
  edgePort: number;
  linkPort?: number;
  healthPort?: number;
  /** The edge listener as the router will report it, `tls:127.0.0.1:<edgePort>`. */
  edgeUrl: string;
}

/**
 * Writes a 1.1.9 edge router config (keys as in the reference's
 * `ziti/cmd/create/config_templates/router.yml`, `ziti create config router edge --tunnelerMode none`):
 * identity files in `dir` (written by `ziti router enroll`), `ctrl.endpoint`, the `edge` listener on
 * `tls:127.0.0.1:<edgePort>` advertising `127.0.0.1:<edgePort>`, the link dialer, a link listener
 * only when `linkPort` is given, no `tunnel` binding, no web listener unless `healthPort`, and the
 * enrollment CSR with SANs localhost/127.0.0.1.
 */
export function writeRouterConfig(options: RouterConfigOptions): RouterConfigFile {
  const dir = resolve(options.dir);
  mkdirSync(dir, { recursive: true });
  const configPath = join(dir, options.fileName ?? 'router.yaml');
  const config: Record<string, unknown> = {
    v: 3,
    identity: {
      cert: join(dir, 'router.cert'),
      server_cert: join(dir, 'router.server.chain.cert'),
      key: join(dir, 'router.key'),
      ca: join(dir, 'router.cas'),
    },
    ctrl: { endpoint: options.ctrlEndpoint },
    link: {
      dialers: [{ binding: 'transport', ...(options.linkGroups?.dialer ? { groups: options.linkGroups.dialer } : {}) }],
      ...(options.linkPort
        ? {
            listeners: [
              {
                binding: 'transport',
                bind: `tls:127.0.0.1:${options.linkPort}`,
                advertise: `tls:127.0.0.1:${options.linkPort}`,
                ...(options.linkGroups?.listener ? { groups: options.linkGroups.listener } : {}),
                options: { outQueueSize: 4 },
              },
            ],
          }
        : {}),
    },
    listeners: [
      {
        binding: 'edge',
        address: `tls:127.0.0.1:${options.edgePort}`,
        options: { advertise: `127.0.0.1:${options.edgePort}`, connectTimeoutMs: 5000, getSessionTimeout: 60 },
      },
    ],
    edge: {
      heartbeatIntervalSeconds: 60,
      db: join(dir, 'router-data-model.json.gzip'),
      csr: {
        country: 'US',
        province: 'NC',
        locality: 'Charlotte',
        organization: 'NetFoundry',
        organizationalUnit: 'Ziti',
        sans: { dns: ['localhost'], ip: ['127.0.0.1'] },
      },
    },
    ...(options.metricsReportInterval ? { metrics: { reportInterval: options.metricsReportInterval } } : {}),
    forwarder: {
      latencyProbeInterval: 10,
      xgressDialQueueLength: 1000,
      xgressDialWorkerCount: 128,
      linkDialQueueLength: 1000,
      linkDialWorkerCount: 32,
    },
    ...(options.healthPort
      ? {
          web: [
            {
              name: 'health-check',
              bindPoints: [
                { interface: `127.0.0.1:${options.healthPort}`, address: `127.0.0.1:${options.healthPort}` },
              ],
              apis: [{ binding: 'health-checks' }],
            },
          ],
        }
      : {}),
  };
  writeFileSync(configPath, toYaml(config));
  return {
    configPath,
    dir,
    ctrlEndpoint: options.ctrlEndpoint,
    edgePort: options.edgePort,
    ...(options.linkPort ? { linkPort: options.linkPort } : {}),
    ...(options.healthPort ? { healthPort: options.healthPort } : {}),
    edgeUrl: `tls:127.0.0.1:${options.edgePort}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Reference controller
// ---------------------------------------------------------------------------------------------

export interface ReferenceControllerOptions {
  /** Its home (PKI, config, database, logs); default a new dir in the run's dir. */
  dir?: string;
  /** Port of the REST APIs (edge-management, edge-client, fabric); default a free port. */
  apiPort?: number;
  /** Port of the control channel routers dial; default a free port. Equal to apiPort: one shared TLS port (ALPN). */
  ctrlPort?: number;
  adminUsername?: string;
  adminPassword?: string;
  /** Debug logs (`-v`). */
  verbose?: boolean;
  /** Deadline for `/version` to answer after `ziti controller run` (default 30 s). */
  readyTimeoutMs?: number;
  /** Sessions time out after this (default 30m), e.g. `'5m'`. */
  sessionTimeout?: string;
  /** Keys of the PKI: RSA 4096 as `ziti pki` and the quickstart make them (default), or EC P-256 (much faster). */
  pkiKeyAlg?: 'RSA' | 'EC';
}

export interface ReferenceController {
  /** `https://127.0.0.1:<apiPort>` */
  apiUrl: string;
  managementUrl: string;
  clientUrl: string;
  /** `tls:127.0.0.1:<ctrlPort>`: what routers put in `ctrl.endpoint`. */
  ctrlEndpoint: string;
  apiPort: number;
  ctrlPort: number;
  adminUsername: string;
  adminPassword: string;
  /** The root CA that signed the controller's server certificate (trust this for the APIs). */
  caBundlePath: string;
  caPem: string;
  /** The controller's TLS server chain and key (e.g. for startApiRecorder). */
  serverCertPath: string;
  serverKeyPath: string;
  dir: string;
  configPath: string;
  process: ZitiProcess;
  /** How long the start took: `ziti pki` (4 certificates), `ziti controller edge init`, run until ready. */
  timings: { pkiMs: number; initMs: number; runMs: number };
  /** Logs in as the admin. */
  login(): Promise<EdgeAdmin>;
  stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// API recorder
// ---------------------------------------------------------------------------------------------

export interface RecordedCall {
  /** ms since the recorder started */
  at: number;
  method: string;
  /** path and query */
  path: string;
  status: number;
  ms: number;
  requestBody: string;
  responseBody: string;
}

export interface ApiRecorder {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** A copy of the identity file whose ztAPI points at the recorder. */
  identityFile: string;
  calls: RecordedCall[];
  /** `+<at>ms METHOD path → status (ms)` per call. */
  summary(): string[];
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Echo server
// ---------------------------------------------------------------------------------------------

export interface EchoServer {
  host: '127.0.0.1';
  port: number;
  /** Connections accepted so far. */
  connections: number;
  /** Bytes echoed so far. */
  bytes: number;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// The run scope
// ---------------------------------------------------------------------------------------------

export interface ZcatResult {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  ms: number;
}

export interface RunResult {
  code: number | null;
  output: string;
  ms: number;
}

export interface StartedRouter {
  id: string;
  name: string;
  config: RouterConfigFile;
  process: ZitiProcess;
  timings: { createMs: number; enrollMs: number; onlineMs: number };
}

export interface ZitiPeers {
  readonly ziti: string;
  /** The run's own temp dir. */
  readonly dir: string;
  /** A new directory inside the run's dir. */
  newDir(name: string): string;
  /** Starts `ziti <args>` in its own process group, output to `<dir>/<name>.log`. */
  spawn(name: string, args: string[], options?: { cwd?: string; env?: Record<string, string> }): ZitiProcess;
  /** Runs `ziti <args>` to its end (deadline `timeoutMs`, default 60 s); throws with its output unless it exits 0. */
  run(name: string, args: string[], options?: { cwd?: string; timeoutMs?: number }): Promise<RunResult>;
  startReferenceController(options?: ReferenceControllerOptions): Promise<ReferenceController>;
  /** `ziti router enroll <config> --jwt <file>` (the JWT is written next to the config). */
  enrollRouter(config: RouterConfigFile, jwt: string, options?: { keyAlg?: 'RSA' | 'EC' }): Promise<RunResult>;
  /** `ziti router run <config>` (CLI agent off; `-v` when verbose). Does not wait for anything. */
  runRouter(config: RouterConfigFile, options?: { name?: string; verbose?: boolean }): ZitiProcess;
  /** Creates an edge router on `admin`'s controller, writes its config, enrolls and runs it, waits until online. */
  startRouter(
    admin: EdgeAdmin,
    options: {
      ctrlEndpoint: string;
      name?: string;
      roleAttributes?: string[];
      linkListener?: boolean;
      /** Link groups of its dialer and listener (see RouterConfigOptions.linkGroups). */
      linkGroups?: { dialer?: string[]; listener?: string[] };
      metricsReportInterval?: string;
      verbose?: boolean;
      onlineTimeoutMs?: number;
      /** Key of the router's enrollment (default RSA 4096, as `ziti router enroll`). */
      keyAlg?: 'RSA' | 'EC';
    },
  ): Promise<StartedRouter>;
  /** `ziti edge enroll --jwt <file> -o <name>.json`; returns the identity file's path. */
  enrollIdentity(jwt: string, options?: { name?: string; keyAlg?: 'RSA' | 'EC' }): Promise<string>;
  /**
   * `ziti tunnel host -i <identity>` (CLI agent off, no resolver: it opens no listener). Does not
   * wait: wait for the service's terminator (EdgeAdmin.waitForTerminator) or a log line.
   */
  runTunnelHost(
    identityFile: string,
    options?: { name?: string; verbose?: boolean; svcPollRateSeconds?: number },
  ): ZitiProcess;
  /**
   * `ziti demo zcat -i <identity> ziti:<service>`: writes `input`, closes stdin (zcat then half-closes
   * the circuit and exits when the far side closes), collects stdout; killed at `timeoutMs` (default 20 s).
   */
  zcat(
    identityFile: string,
    service: string,
    input: string | Buffer,
    options?: { verbose?: boolean; timeoutMs?: number; name?: string },
  ): Promise<ZcatResult>;
  /**
   * One `zcat` of a line that must come back through an echoing service: `true`, or why not (its
   * exit and the end of its stderr), for a `waitFor` until dials work.
   */
  zcatEchoes(
    identityFile: string,
    service: string,
    options: { name: string; timeoutMs?: number },
  ): Promise<true | string>;
  /** A TCP echo server on 127.0.0.1 (half-close aware: ends its side when the peer ends). */
  startEchoServer(options?: { port?: number }): Promise<EchoServer>;
  /**
   * A recording TLS proxy for the Edge Client API: serves `serverCert`/`serverKey` (a chain the
   * identity's CA trusts, e.g. the reference controller's), forwards each request to `upstreamUrl`
   * with the identity's own client certificate, and records it. Use its `identityFile`.
   */
  startApiRecorder(options: {
    upstreamUrl: string;
    upstreamCa: string;
    serverCertPath: string;
    serverKeyPath: string;
    identityFile: string;
  }): Promise<ApiRecorder>;
  /** Every socket that a process of this run (or its group) listens on, from /proc (Linux). */
  listeners(): ListeningSocket[];
  /** Kills every process of the run (SIGTERM, then SIGKILL), closes servers, removes the dir. */
  cleanup(): Promise<void>;
}

/** Makes the scope for one test run (its own temp dir under the OS temp dir). */
export function createZitiPeers(options: { ziti: string; prefix?: string; keep?: boolean }): ZitiPeers {
  const ziti = options.ziti;
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? 'ziti-peers-'));
  const home = join(dir, 'home');
  mkdirSync(join(home, '.config', 'ziti'), { recursive: true });
  const processes: ZitiProcess[] = [];
  const closers: (() => Promise<void>)[] = [];
  const keep = options.keep ?? process.env.ZITI_PEERS_KEEP === '1';
  let dirs = 0;
  ensureWatchdog();
  if (!keep) {
    orphanDirs.add(dir);
    syncWatchdog();
  }

  const newDir = (name: string) => {
    const d = join(dir, `${String(++dirs).padStart(2, '0')}-${name.replace(/[^\w.-]/g, '_')}`);
    mkdirSync(d, { recursive: true });
    return d;
  };

  const spawnIn = (name: string, args: string[], o: { cwd?: string; env?: Record<string, string> } = {}) => {
    const logFile = join(dir, 'logs', `${name.replace(/[^\w.-]/g, '_')}.log`);
    const p = spawnZiti(name, ziti, args, logFile, { cwd: o.cwd ?? dir, home, ...(o.env ? { env: o.env } : {}) });
    processes.push(p);
    return p;
  };

  const run = async (name: string, args: string[], o: { cwd?: string; timeoutMs?: number } = {}) => {
    const started = Date.now();
    const p = spawnIn(name, args, o.cwd ? { cwd: o.cwd } : {});
    const timeoutMs = o.timeoutMs ?? 60_000;
    const timer = deadline(timeoutMs);
    const exit = await Promise.race([p.exited, timer]);
    if (!exit) {
      await p.kill('SIGKILL');
      throw new ZitiPeerError(`ziti ${args.join(' ')}`, `did not finish in ${timeoutMs} ms`, [p]);
    }
    if (exit.code !== 0) throw new ZitiPeerError(`ziti ${args.join(' ')}`, `exited with ${describeExit(exit)}`, [p]);
    return { code: exit.code, output: p.logs(), ms: Date.now() - started };
  };

  const peers: ZitiPeers = {
    ziti,
    dir,
    newDir,
    spawn: spawnIn,
    run,

    async startReferenceController(o = {}) {
      const ctrlDir = o.dir ? resolve(o.dir) : newDir('controller');
      mkdirSync(join(ctrlDir, 'db'), { recursive: true });
      const pki = join(ctrlDir, 'pki');
      const apiPort = o.apiPort ?? (await freePort());
      const ctrlPort = o.ctrlPort ?? (await freePort());
      const adminUsername = o.adminUsername ?? 'admin';
      const adminPassword = o.adminPassword ?? `pw-${randomBytes(9).toString('hex')}`;

      let t = Date.now();
      // The minimal PKI of `ziti edge quickstart` (ziti/cmd/edge/quickstart.go createMinimalPki).
      const curve = o.pkiKeyAlg === 'EC' ? ['--curve=P256'] : [];
      const pkiStep = (args: string[]) => run('controller-pki', ['pki', 'create', ...args, `--pki-root=${pki}`]);
      await pkiStep(['ca', '--ca-file=root-ca', '--ca-name=root-ca', ...curve]);
      await pkiStep([
        'intermediate',
        ...curve,
        '--ca-name=root-ca',
        '--intermediate-name=intermediate-ca',
        '--intermediate-file=intermediate-ca',
        '--max-path-len=1',
      ]);
      await pkiStep([
        'server',
        ...curve,
        '--ca-name=intermediate-ca',
        '--server-name=server',
        '--server-file=server',
        '--dns=localhost',
        '--ip=127.0.0.1',
      ]);
      await pkiStep([
        'client',
        '--ca-name=intermediate-ca',
        '--client-name=client',
        '--client-file=client',
        '--key-file=server',
      ]);
      const file = {
        rootCa: join(pki, 'root-ca', 'certs', 'root-ca.cert'),
        clientCert: join(pki, 'intermediate-ca', 'certs', 'client.cert'),
        serverChain: join(pki, 'intermediate-ca', 'certs', 'server.chain.pem'),
        serverKey: join(pki, 'intermediate-ca', 'keys', 'server.key'),
        signerCert: join(pki, 'intermediate-ca', 'certs', 'intermediate-ca.cert'),
        signerKey: join(pki, 'intermediate-ca', 'keys', 'intermediate-ca.key'),
      };
      const identity = { cert: file.clientCert, server_cert: file.serverChain, key: file.serverKey, ca: file.rootCa };
      const config = {
        v: 3,
        db: join(ctrlDir, 'db', 'ctrl.db'),
        identity,
        trustDomain: 'ziti-peers',
        ctrl: {
          options: { advertiseAddress: `tls:127.0.0.1:${ctrlPort}` },
          listener: `tls:127.0.0.1:${ctrlPort}`,
        },
        healthChecks: { boltCheck: { interval: '30s', timeout: '20s', initialDelay: '30s' } },
        edge: {
          api: { sessionTimeout: o.sessionTimeout ?? '30m', address: `127.0.0.1:${apiPort}` },
          enrollment: {
            signingCert: { cert: file.signerCert, key: file.signerKey },
            edgeIdentity: { duration: '180m' },
            edgeRouter: { duration: '180m' },
          },
        },
        web: [
          {
            name: 'client-management',
            bindPoints: [{ interface: `127.0.0.1:${apiPort}`, address: `127.0.0.1:${apiPort}` }],
            identity,
            options: {
              idleTimeout: '5000ms',
              readTimeout: '5000ms',
              writeTimeout: '100000ms',
              minTLSVersion: 'TLS1.2',
              maxTLSVersion: 'TLS1.3',
            },
            apis: [
              { binding: 'edge-management', options: {} },
              { binding: 'edge-client', options: {} },
              { binding: 'fabric', options: {} },
            ],
          },
        ],
      };
      const configPath = join(ctrlDir, 'ctrl.yaml');
      writeFileSync(configPath, toYaml(config));
      if (/0\.0\.0\.0/.test(readFileSync(configPath, 'utf8'))) throw new Error('controller config binds 0.0.0.0');
      const pkiMs = Date.now() - t;
      t = Date.now();

      await run('controller-edge-init', [
        'controller',
        'edge',
        'init',
        configPath,
        '-u',
        adminUsername,
        '-p',
        adminPassword,
      ]);
      const initMs = Date.now() - t;
      t = Date.now();

      const proc = spawnIn(
        'controller',
        ['controller', 'run', '--cliagent=false', ...(o.verbose ? ['-v'] : []), configPath],
        { cwd: ctrlDir },
      );
      const apiUrl = `https://127.0.0.1:${apiPort}`;
      const caPem = readFileSync(file.rootCa, 'utf8');
      const http = createHttpClient(apiUrl, caPem);
      try {
        await waitUntil(
          `reference controller ${apiUrl}/version`,
          async () => (await http({ path: '/version' })).status === 200 && (await tcpAnswers(ctrlPort)),
          { timeoutMs: o.readyTimeoutMs ?? 30_000, processes: [proc] },
        );
      } catch (error) {
        await proc.kill('SIGKILL');
        throw error;
      }
      return {
        apiUrl,
        managementUrl: `${apiUrl}${MANAGEMENT}`,
        clientUrl: `${apiUrl}/edge/client/v1`,
        ctrlEndpoint: `tls:127.0.0.1:${ctrlPort}`,
        apiPort,
        ctrlPort,
        adminUsername,
        adminPassword,
        caBundlePath: file.rootCa,
        caPem,
        serverCertPath: file.serverChain,
        serverKeyPath: file.serverKey,
        dir: ctrlDir,
        configPath,
        process: proc,
        timings: { pkiMs, initMs, runMs: Date.now() - t },
        login: () => adminLogin(apiUrl, adminUsername, adminPassword, { ca: caPem }),
        stop: async () => {
          await proc.kill('SIGTERM');
        },
      };
    },

    async enrollRouter(config, jwt, o = {}) {
      const jwtFile = join(config.dir, 'router.jwt');
      writeFileSync(jwtFile, jwt);
      return run(
        `router-enroll-${config.edgePort}`,
        ['router', 'enroll', config.configPath, '--jwt', jwtFile, ...(o.keyAlg ? ['--keyAlg', o.keyAlg] : [])],
        { cwd: config.dir },
      );
    },

    runRouter(config, o = {}) {
      return spawnIn(
        o.name ?? `router-${config.edgePort}`,
        ['router', 'run', '--cli-agent=false', ...(o.verbose ? ['-v'] : []), config.configPath],
        { cwd: config.dir },
      );
    },

    async startRouter(admin, o) {
      let t = Date.now();
      const created = await admin.createEdgeRouter({
        ...(o.name ? { name: o.name } : {}),
        ...(o.roleAttributes ? { roleAttributes: o.roleAttributes } : {}),
      });
      const createMs = Date.now() - t;
      const config = writeRouterConfig({
        ctrlEndpoint: o.ctrlEndpoint,
        dir: newDir(`router-${created.name}`),
        edgePort: await freePort(),
        ...(o.linkListener ? { linkPort: await freePort() } : {}),
        ...(o.linkGroups ? { linkGroups: o.linkGroups } : {}),
        ...(o.metricsReportInterval ? { metricsReportInterval: o.metricsReportInterval } : {}),
      });
      t = Date.now();
      await peers.enrollRouter(config, created.enrollmentJwt, o.keyAlg ? { keyAlg: o.keyAlg } : {});
      const enrollMs = Date.now() - t;
      const proc = peers.runRouter(config, { name: `router-${created.name}`, verbose: o.verbose ?? false });
      const { ms: onlineMs } = await admin.waitForRouterOnline(created.id, true, {
        timeoutMs: o.onlineTimeoutMs ?? 20_000,
        processes: [proc],
      });
      return { id: created.id, name: created.name, config, process: proc, timings: { createMs, enrollMs, onlineMs } };
    },

    async enrollIdentity(jwt, o = {}) {
      const name = o.name ?? uniqueName('identity');
      const d = newDir(`identity-${name}`);
      const jwtFile = join(d, `${name}.jwt`);
      const out = join(d, `${name}.json`);
      writeFileSync(jwtFile, jwt);
      await run(
        `edge-enroll-${name}`,
        ['edge', 'enroll', '--jwt', jwtFile, '-o', out, ...(o.keyAlg ? ['-a', o.keyAlg] : [])],
        {
          cwd: d,
        },
      );
      if (!existsSync(out)) throw new ZitiPeerError(`ziti edge enroll ${name}`, `no identity file at ${out}`);
      return out;
    },

    runTunnelHost(identityFile, o = {}) {
      return spawnIn(o.name ?? 'tunnel-host', [
        'tunnel',
        'host',
        '--cli-agent=false',
        '-i',
        identityFile,
        ...(o.svcPollRateSeconds ? ['--svcPollRate', String(o.svcPollRateSeconds)] : []),
        ...(o.verbose ? ['-v'] : []),
      ]);
    },

    async zcatEchoes(identityFile, service, o) {
      const line = `${o.name} ${Date.now()}\n`;
      const r = await peers.zcat(identityFile, service, line, {
        name: o.name,
        ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
      });
      return r.code === 0 && r.stdout.toString('utf8') === line
        ? true
        : `exit ${r.code}: ${r.stderr.trim().slice(-400)}`;
    },

    async zcat(identityFile, service, input, o = {}) {
      const started = Date.now();
      const name = o.name ?? `zcat-${processes.length}`;
      const logFile = join(dir, 'logs', `${name}.log`);
      const p = spawnZiti(
        name,
        ziti,
        ['demo', 'zcat', '-i', identityFile, ...(o.verbose ? ['-v'] : []), `ziti:${service}`],
        logFile,
        { cwd: dir, home, pipeStdio: true },
      );
      processes.push(p);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      p.child.stdout!.on('data', (c: Buffer) => out.push(c));
      p.child.stderr!.on('data', (c: Buffer) => {
        err.push(c);
        writeFileSync(logFile, c, { flag: 'a' });
      });
      p.child.stdin!.on('error', () => {}); // zcat may exit before reading its input (a refused dial)
      p.child.stdin!.end(input);
      const timeoutMs = o.timeoutMs ?? 20_000;
      const timer = deadline(timeoutMs);
      let exit = await Promise.race([p.exited, timer]);
      const timedOut = !exit;
      if (!exit) exit = await p.kill('SIGKILL');
      // Let the pipes drain after the exit.
      await Promise.all(
        [p.child.stdout!, p.child.stderr!].map(
          (s) => new Promise<void>((r) => (s.readableEnded || s.destroyed ? r() : s.once('close', () => r()))),
        ),
      );
      return {
        stdout: Buffer.concat(out),
        stderr: Buffer.concat(err).toString('utf8'),
        code: exit.code,
        signal: exit.signal,
        timedOut,
        ms: Date.now() - started,
      };
    },

    async startEchoServer(o = {}) {
      const sockets = new Set<Socket>();
      const echo: EchoServer = {
        host: '127.0.0.1',
        port: 0,
        connections: 0,
        bytes: 0,
        close: () =>
          new Promise<void>((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      };
      const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
        echo.connections++;
        sockets.add(socket);
        socket.on('data', (chunk: Buffer) => {
          echo.bytes += chunk.length;
          socket.write(chunk);
        });
        socket.on('end', () => socket.end());
        socket.on('error', () => socket.destroy());
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((r, reject) => {
        server.once('error', reject);
        server.listen(o.port ?? 0, '127.0.0.1', () => r());
      });
      echo.port = (server.address() as AddressInfo).port;
      closers.push(echo.close);
      return echo;
    },

    async startApiRecorder(o) {
      const identity = JSON.parse(readFileSync(o.identityFile, 'utf8')) as {
        ztAPI: string;
        ztAPIs?: string[] | null;
        id: { cert: string; key: string; ca: string };
      };
      const pem = (v: string) => v.replace(/^pem:/, '');
      const upstream = new URL(o.upstreamUrl);
      const agent = new Agent({
        keepAlive: true,
        ca: o.upstreamCa,
        cert: pem(identity.id.cert),
        key: pem(identity.id.key),
        servername: 'localhost',
      });
      const calls: RecordedCall[] = [];
      const t0 = Date.now();
      const clip = (b: Buffer) => (b.length > 8000 ? `${b.subarray(0, 8000).toString('utf8')}…` : b.toString('utf8'));
      const decoded = (b: Buffer, encoding: string | string[] | undefined) => {
        try {
          if (encoding === 'gzip') return gunzipSync(b);
          if (encoding === 'deflate') return inflateSync(b);
          if (encoding === 'br') return brotliDecompressSync(b);
        } catch {
          // recorded as sent
        }
        return b;
      };
      const callLog = join(dir, 'logs', `api-recorder-${basename(o.identityFile, '.json')}.jsonl`);
      const record = (call: RecordedCall) => {
        calls.push(call);
        writeFileSync(callLog, `${JSON.stringify(call)}\n`, { flag: 'a' });
      };
      const server = createHttpsServer(
        {
          cert: readFileSync(o.serverCertPath),
          key: readFileSync(o.serverKeyPath),
          requestCert: true,
          rejectUnauthorized: false,
        },
        (req: IncomingMessage, res: ServerResponse) => {
          const at = Date.now() - t0;
          const body: Buffer[] = [];
          req.on('data', (c: Buffer) => body.push(c));
          req.on('end', () => {
            const headers = { ...req.headers, host: upstream.host };
            delete headers.connection;
            const up = httpsRequest(
              {
                host: upstream.hostname,
                port: upstream.port,
                method: req.method,
                path: req.url,
                headers,
                agent,
              },
              (upRes) => {
                const chunks: Buffer[] = [];
                res.writeHead(upRes.statusCode ?? 502, upRes.headers);
                upRes.on('data', (c: Buffer) => {
                  chunks.push(c);
                  res.write(c);
                });
                upRes.on('end', () => {
                  res.end();
                  record({
                    at,
                    method: req.method ?? '?',
                    path: req.url ?? '?',
                    status: upRes.statusCode ?? 0,
                    ms: Date.now() - t0 - at,
                    requestBody: clip(decoded(Buffer.concat(body), req.headers['content-encoding'])),
                    responseBody: clip(decoded(Buffer.concat(chunks), upRes.headers['content-encoding'])),
                  });
                });
              },
            );
            up.on('error', (e) => {
              record({
                at,
                method: req.method ?? '?',
                path: req.url ?? '?',
                status: 502,
                ms: Date.now() - t0 - at,
                requestBody: clip(Buffer.concat(body)),
                responseBody: `upstream error: ${e.message}`,
              });
              res.writeHead(502).end();
            });
            up.end(Buffer.concat(body));
          });
        },
      );
      await new Promise<void>((r, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => r());
      });
      const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const rewrite = (u: string) => {
        const parsed = new URL(u);
        return `${url}${parsed.pathname}`;
      };
      const copy = {
        ...identity,
        ztAPI: rewrite(identity.ztAPI),
        ...(Array.isArray(identity.ztAPIs) ? { ztAPIs: identity.ztAPIs.map(rewrite) } : {}),
      };
      const identityFile = o.identityFile.replace(/(\.json)?$/, '.recorded.json');
      writeFileSync(identityFile, JSON.stringify(copy));
      const close = () =>
        new Promise<void>((r) => {
          agent.destroy();
          server.closeAllConnections();
          server.close(() => r());
        });
      closers.push(close);
      return {
        url,
        identityFile,
        calls,
        summary: () => calls.map((c) => `+${c.at}ms ${c.method} ${c.path} → ${c.status} (${c.ms} ms)`),
        close,
      };
    },

    listeners() {
      return listeningSockets(processes.filter((p) => !p.exitStatus()).map((p) => p.pid));
    },

    async cleanup() {
      await Promise.all(processes.map((p) => p.kill('SIGTERM', 3_000)));
      await Promise.all(closers.splice(0).map((c) => c().catch(() => {})));
      if (keep) console.log(`[ziti-peers] kept ${dir}`);
      else rmSync(dir, { recursive: true, force: true });
      orphanDirs.delete(dir);
      syncWatchdog();
    },
  };
  return peers;
}

function tcpAnswers(port: number): Promise<boolean> {
  return new Promise((r) => {
    const s = netConnect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      s.destroy();
      r(ok);
    };
    s.setTimeout(1000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

// ---------------------------------------------------------------------------------------------
// Listening sockets (Linux /proc)
// ---------------------------------------------------------------------------------------------

export interface ListeningSocket {
  pid: number;
  command: string;
  protocol: 'tcp' | 'tcp6' | 'udp' | 'udp6';
  address: string;
  port: number;
}

function hexToIpv4(hex: string): string {
  const n = Buffer.from(hex, 'hex');
  return `${n[3]}.${n[2]}.${n[1]}.${n[0]}`;
}

function hexToIpv6(hex: string): string {
  const words: string[] = [];
  for (let i = 0; i < 4; i++) {
    const w = Buffer.from(hex.slice(i * 8, i * 8 + 8), 'hex')
      .reverse()
      .toString('hex');
    words.push(w.slice(0, 4), w.slice(4));
  }
  const v6 = words.map((w) => w.replace(/^0+(?=.)/, '')).join(':');
  const mapped = /^0:0:0:0:0:ffff:([0-9a-f]+):([0-9a-f]+)$/.exec(v6);
  if (mapped) {
    const a = parseInt(mapped[1]!, 16);
    const b = parseInt(mapped[2]!, 16);
    return `::ffff:${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  return v6 === '0:0:0:0:0:0:0:0' ? '::' : v6 === '0:0:0:0:0:0:0:1' ? '::1' : v6;
}

/**
 * The listening TCP sockets and bound UDP sockets of the given processes and every process in their
 * process groups, read from /proc (no `ss` needed). Empty off Linux.
 */
export function listeningSockets(pids: readonly number[]): ListeningSocket[] {
  if (!existsSync('/proc/net/tcp')) return [];
  const groups = new Set(pids);
  const members = new Map<number, string>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      const pgrp = Number(fields[2]);
      if (groups.has(Number(entry)) || groups.has(pgrp))
        members.set(Number(entry), stat.slice(stat.indexOf('(') + 1, close));
    } catch {
      // gone
    }
  }
  const inodes = new Map<string, number>();
  for (const pid of members.keys()) {
    try {
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
          if (m) inodes.set(m[1]!, pid);
        } catch {
          // closed meanwhile
        }
      }
    } catch {
      // gone
    }
  }
  const result: ListeningSocket[] = [];
  for (const protocol of ['tcp', 'tcp6', 'udp', 'udp6'] as const) {
    let table = '';
    try {
      table = readFileSync(`/proc/net/${protocol}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const [hexAddr, hexPort] = cols[1]!.split(':');
      const state = cols[3];
      const pid = inodes.get(cols[9]!);
      if (pid === undefined) continue;
      if (protocol.startsWith('tcp') ? state !== '0A' : state !== '07') continue;
      result.push({
        pid,
        command: members.get(pid) ?? '?',
        protocol,
        address: protocol.endsWith('6') ? hexToIpv6(hexAddr!) : hexToIpv4(hexAddr!),
        port: parseInt(hexPort!, 16),
      });
    }
  }
  return result;
}
