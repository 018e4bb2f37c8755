/**
 * Starts the whole cluster on this machine: each service as its own process (any number of
 * replicas) on the local NATS, Redis and Postgres. `npm run cluster` runs it until Ctrl-C and keeps
 * the secrets it generates in its data directory, so the next start reuses them; the end-to-end
 * suite uses `startLocalCluster` with a namespace and databases of its own.
 *
 * Each process runs its service's JavaScript bundle (deploy/bundles.ts, as the image does: no
 * TypeScript compiler in the process), made again when a source changed; `fromSources`
 * (`ZITI_CLUSTER_FROM_SOURCES=1`) runs the TypeScript sources through tsx instead.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { clusterBundles, serviceRuntime } from './bundles.ts';
import { freePort } from './ports.ts';

export const serviceNames = ['pki-enrollment', 'auth', 'policy', 'inventory', 'audit', 'gateway', 'fabric'] as const;
export type ServiceName = (typeof serviceNames)[number];

const databaseVar: Record<Exclude<ServiceName, 'gateway' | 'fabric'>, string> = {
  auth: 'AUTH_DATABASE_URL',
  'pki-enrollment': 'PKI_DATABASE_URL',
  policy: 'POLICY_DATABASE_URL',
  inventory: 'INVENTORY_DATABASE_URL',
  audit: 'AUDIT_DATABASE_URL',
};

export interface ClusterOptions {
  postgresUrl?: string;
  redisUrl?: string;
  natsUrl?: string;
  /** Isolates subjects, stream, Redis keys and database names. */
  namespace?: string;
  /**
   * The first gateway's HTTPS port; gateway replica `i` listens on `port + i`. Unset: every
   * gateway replica takes a free port.
   */
  port?: number;
  /**
   * The first fabric replica's control port (routers connect to it); replica `i` listens on
   * `ctrlPort + i`. Unset: every fabric replica takes a free port.
   */
  ctrlPort?: number;
  replicas?: Partial<Record<ServiceName, number>>;
  env?: Record<string, string>;
  adminPassword?: string;
  /**
   * Keeps the secrets the cluster generates (`secret.key`, `admin-password`, mode 0600 in a 0700
   * directory) and reuses them at the next start over the same databases. Unset (tests): fresh
   * secrets every start.
   */
  dataDir?: string;
  /** Extra arguments for every service's node process (e.g. `--cpu-prof` for profiling). */
  nodeArgs?: string[];
  /**
   * Runs each service's TypeScript sources through tsx instead of its bundle (default:
   * `ZITI_CLUSTER_FROM_SOURCES=1`). Slower to start and about twice the memory.
   */
  fromSources?: boolean;
  /**
   * An environment whose documented configuration (`passedConfiguration`) every process is given:
   * `npm run cluster` passes its own. Unset (tests): only what `env` and the options say.
   */
  configuration?: NodeJS.ProcessEnv;
  /** Drop the databases on stop (tests). */
  dropDatabases?: boolean;
  logDir?: string;
}

/**
 * Set by the cluster for each process, never taken from the environment it was started with: where
 * the cluster's NATS, Redis and databases are, its namespace, the ports it chose, the secrets it
 * read or kept. (`ZITI_CLUSTER_*` configure the cluster itself.)
 */
export const clusterOwnedVariables = [
  'NATS_URL',
  'REDIS_URL',
  'ZITI_BUS_NAMESPACE',
  'ZITI_SECRET_KEY',
  'ZITI_ADMIN_PASSWORD',
  'ZITI_PORT',
  'ZITI_CTRL_PORT',
  'HEALTH_PORT',
  ...Object.values(databaseVar),
] as const;

/** Variables of the README's configuration table that are not `ZITI_*`, passed on as they are. */
const passedVariables = ['LOG_LEVEL', 'LOG_FORMAT', 'HEALTH_BIND', 'DATABASE_POOL_SIZE', 'REDIS_KEY_PREFIX'];

/**
 * The documented configuration in `env` that the cluster passes on to every process: every
 * `ZITI_*` (rate limits, hash settings, certificate lifetimes, audit retention, ...) and the
 * variables of `passedVariables`, except what the cluster sets itself (`clusterOwnedVariables`) and
 * the cluster's own `ZITI_CLUSTER_*`. Empty values are left out.
 */
export function passedConfiguration(env: NodeJS.ProcessEnv): Record<string, string> {
  const owned = new Set<string>(clusterOwnedVariables);
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || value === '' || owned.has(name) || name.startsWith('ZITI_CLUSTER_')) continue;
    if (name.startsWith('ZITI_') || passedVariables.includes(name)) out[name] = value;
  }
  return out;
}

interface Proc {
  service: ServiceName;
  replica: number;
  child: ChildProcess;
  healthPort: number;
  exited: Promise<number | null>;
  /** The HTTPS port (gateways), the control port (fabric). */
  port: number;
}

const root = fileURLToPath(new URL('..', import.meta.url));

function probe(port: number, path: string): Promise<number> {
  return new Promise((resolve) => {
    const r = request({ host: '127.0.0.1', port, path, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    r.on('error', () => resolve(0));
    r.on('timeout', () => {
      r.destroy();
      resolve(0);
    });
    r.end();
  });
}

async function waitUntil(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
  failFast?: () => string | undefined,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    const failure = failFast?.();
    if (failure) throw new Error(`${what}: ${failure}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A secret kept in `dir/file` (0600), or undefined. */
function readKept(dir: string, file: string): string | undefined {
  const path = join(dir, file);
  return existsSync(path) ? readFileSync(path, 'utf8').trim() || undefined : undefined;
}

function keep(dir: string, file: string, value: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const path = join(dir, file);
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * Whether a service's database already holds a row of `table` matching `where` (a previous start's data:
 * pki-enrollment's encrypted keys, auth's default admin); false before its migrations ran.
 */
async function hasRow(url: string, table: string, where = 'true'): Promise<boolean> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const exists = await c.query('select to_regclass($1) is not null as present', [table]);
    if (!exists.rows[0]?.present) return false;
    return ((await c.query(`select 1 from ${table} where ${where} limit 1`)).rowCount ?? 0) > 0;
  } finally {
    await c.end();
  }
}

/**
 * Replicas per service from `gateway=2,auth=2` (`ZITI_CLUSTER_REPLICAS`, `--replicas`); services
 * not named run one replica.
 */
export function parseReplicas(spec: string): Partial<Record<ServiceName, number>> {
  const out: Partial<Record<ServiceName, number>> = {};
  for (const part of spec
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, count] = part.split('=').map((x) => x.trim());
    if (!serviceNames.includes(name as ServiceName))
      throw new Error(`replicas: unknown service ${name}; expected one of ${serviceNames.join(', ')}`);
    const n = Number(count);
    if (!Number.isInteger(n) || n < 1 || n > 16)
      throw new Error(`replicas: ${name}=${count ?? ''} is not a count from 1 to 16`);
    out[name as ServiceName] = n;
  }
  return out;
}

export async function startLocalCluster(options: ClusterOptions = {}) {
  const namespace = options.namespace ?? '';
  const postgresUrl = options.postgresUrl ?? process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const natsUrl = options.natsUrl ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  const basePort = options.port;
  const port = basePort ?? (await freePort());
  // The control ports of the fabric replicas started with the cluster.
  const initialCtrlPorts: number[] = [];
  for (let i = 0; i < (options.replicas?.fabric ?? 1); i++)
    initialCtrlPorts.push(options.ctrlPort !== undefined ? options.ctrlPort + i : await freePort());
  const dataDir = options.dataDir ? resolve(options.dataDir) : undefined;
  const logDir = options.logDir ?? join(tmpdir(), `ziti-cluster-${namespace || 'default'}`);
  mkdirSync(logDir, { recursive: true });

  const dbPrefix = (namespace || 'ziti').toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const databases: Record<string, string> = {};
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  try {
    for (const svc of Object.keys(databaseVar)) {
      const name = `${dbPrefix}_${svc.replace('-enrollment', '').replace('-', '_')}`;
      const exists = await admin.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount === 0) await admin.query(`create database "${name}"`);
      const u = new URL(postgresUrl);
      u.pathname = `/${name}`;
      databases[svc] = u.toString();
    }
  } finally {
    await admin.end();
  }

  // The at-rest key: the environment's, else the kept one, else a new one (kept). Keys stored
  // under a key that was not kept cannot be read with a new one: say so instead of failing later.
  let secretKey = process.env.ZITI_SECRET_KEY ?? (dataDir ? readKept(dataDir, 'secret.key') : undefined);
  if (!secretKey) {
    if (dataDir && (await hasRow(databases['pki-enrollment']!, 'pki_material'))) {
      const names = Object.values(databases).map((u) => new URL(u).pathname.slice(1));
      const pki = new URL(databases['pki-enrollment']!).pathname.slice(1);
      throw new Error(
        `the database ${pki} holds keys, but no secret key is kept in ${dataDir}: set ZITI_SECRET_KEY ` +
          `to the key the cluster first ran with, or drop ${names.join(', ')} to start afresh`,
      );
    }
    secretKey = randomBytes(32).toString('base64url');
    if (dataDir) keep(dataDir, 'secret.key', secretKey);
  }
  // The admin password only matters at the start that creates the admin. Unknown ('') when the
  // admin exists and its password was neither given nor kept.
  let adminPassword =
    options.adminPassword ??
    process.env.ZITI_ADMIN_PASSWORD ??
    (dataDir ? readKept(dataDir, 'admin-password') : undefined) ??
    '';
  let adminPasswordGenerated = false;
  if (!adminPassword && !(dataDir && (await hasRow(databases.auth!, 'identities', 'is_default_admin')))) {
    adminPassword = randomBytes(12).toString('base64url');
    adminPasswordGenerated = true;
    if (dataDir) keep(dataDir, 'admin-password', adminPassword);
  }

  const adminUsername = options.configuration?.ZITI_ADMIN_USERNAME || 'admin';
  const baseEnv: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    // Defaults, which the configuration passed on overrides.
    REDIS_KEY_PREFIX: namespace ? `${namespace}:` : 'ziti:',
    ZITI_BIND: '127.0.0.1',
    ZITI_ADVERTISED_ADDRESS: `localhost:${port}`,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    ...(process.env.ZITI_AUDIT_RETENTION_DAYS
      ? { ZITI_AUDIT_RETENTION_DAYS: process.env.ZITI_AUDIT_RETENTION_DAYS }
      : {}),
    ...(options.configuration ? passedConfiguration(options.configuration) : {}),
    ZITI_ADMIN_USERNAME: adminUsername,
    // The cluster's own (clusterOwnedVariables).
    NATS_URL: natsUrl,
    REDIS_URL: redisUrl,
    ZITI_BUS_NAMESPACE: namespace,
    ZITI_SECRET_KEY: secretKey,
    ...(adminPassword ? { ZITI_ADMIN_PASSWORD: adminPassword } : {}),
    ZITI_PORT: String(port),
    ...(options.env ?? {}),
  };
  for (const [svc, url] of Object.entries(databases)) baseEnv[databaseVar[svc as keyof typeof databaseVar]] = url;

  // The bundles every process runs (made now if a source changed since they were last made).
  const fromSources = options.fromSources ?? process.env.ZITI_CLUSTER_FROM_SOURCES === '1';
  let bundleDir: string | undefined;
  if (!fromSources) {
    try {
      bundleDir = await clusterBundles();
    } catch (err) {
      // A compile error shows again, with its place, when the service runs from its sources.
      const errors = (err as { errors?: { text: string }[] }).errors;
      const reason = errors?.length ? errors.map((e) => e.text).join('; ') : (err as Error).message;
      process.stderr.write(`local cluster: could not bundle the services (${reason}); running their sources\n`);
    }
  }
  // A bundle runs as in the image (serviceRuntime); the sources as they always ran.
  const entry = (service: ServiceName): string[] =>
    bundleDir
      ? [...serviceRuntime.nodeArgs[service], ...(options.nodeArgs ?? []), join(bundleDir, `${service}.mjs`)]
      : [...(options.nodeArgs ?? []), '--import', 'tsx', join(root, 'services', service, 'src', 'main.ts')];
  const runtimeEnv: Record<string, string> = bundleDir ? { ...serviceRuntime.env } : {};

  const procs: Proc[] = [];

  /** The lowest replica number no running replica of the service has. */
  function nextReplica(service: ServiceName): number {
    const taken = new Set(procs.filter((p) => p.service === service).map((p) => p.replica));
    let i = 0;
    while (taken.has(i)) i++;
    return i;
  }

  async function startOne(service: ServiceName, replica: number, choosePortsAgain = false): Promise<Proc> {
    if (choosePortsAgain && service === 'fabric' && options.ctrlPort === undefined)
      initialCtrlPorts[replica] = await freePort();
    const healthPort = await freePort();
    // Every gateway replica listens on a port of its own (`gatewayPorts()`): the first on `port`,
    // replica i on `port + i` when the port was chosen, else on a free one. (Node 20 has no
    // `reusePort`, and separate processes cannot share a listening port otherwise.)
    const ownPort: Record<string, string> =
      service === 'gateway' && replica > 0
        ? { ZITI_PORT: String(basePort !== undefined ? basePort + replica : await freePort()) }
        : service === 'fabric'
          ? {
              ZITI_CTRL_PORT: String(
                initialCtrlPorts[replica] ??
                  (options.ctrlPort !== undefined ? options.ctrlPort + replica : await freePort()),
              ),
            }
          : {};
    const log = createWriteStream(join(logDir, `${service}-${replica}.log`), { flags: 'a' });
    const child = spawn(process.execPath, entry(service), {
      cwd: root,
      env: { ...runtimeEnv, ...baseEnv, ...ownPort, HEALTH_PORT: String(healthPort) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const listening = ownPort.ZITI_CTRL_PORT ?? ownPort.ZITI_PORT ?? port;
    const proc: Proc = { service, replica, child, healthPort, exited, port: Number(listening) };
    procs.push(proc);
    return proc;
  }

  function logTail(p: Proc): string {
    try {
      return readFileSync(join(logDir, `${p.service}-${p.replica}.log`), 'utf8')
        .split('\n')
        .slice(-15)
        .join('\n');
    } catch {
      return '';
    }
  }

  async function awaitReady(p: Proc): Promise<void> {
    let exitCode: number | null | undefined;
    void p.exited.then((c) => {
      exitCode = c;
    });
    await waitUntil(
      async () => (await probe(p.healthPort, '/readyz')) === 200,
      `${p.service} #${p.replica} to be ready`,
      120_000,
      () => (exitCode !== undefined ? `exited with ${exitCode}\n${logTail(p)}` : undefined),
    );
  }

  /**
   * A port chosen free can be taken before the process listens on it (an outgoing connection's
   * ephemeral port, another process): a replica that exits on EADDRINUSE is started again with its
   * ports chosen anew (the health port always; fabric's control port and a later gateway's HTTPS
   * port unless the options fixed them), at most three times.
   */
  async function startReady(service: ServiceName, replica: number, first: Proc): Promise<void> {
    let p = first;
    for (let attempt = 1; ; attempt++) {
      try {
        return await awaitReady(p);
      } catch (err) {
        const taken = /EADDRINUSE: address already in use [\d.]+:(\d+)/.exec(logTail(p))?.[1];
        // The port the cluster chose and can choose again: not the first gateway's (its advertised
        // address), nor one the options fixed.
        const chosen =
          Number(taken) === p.healthPort ||
          (Number(taken) === p.port &&
            (service === 'fabric'
              ? options.ctrlPort === undefined
              : service === 'gateway' && replica > 0 && basePort === undefined));
        if (p.child.exitCode === null || !chosen || attempt >= 3) throw err;
        procs.splice(procs.indexOf(p), 1);
        p = await startOne(service, replica, true);
      }
    }
  }

  async function startService(service: ServiceName, count = options.replicas?.[service] ?? 1): Promise<void> {
    const started: Proc[] = [];
    for (let i = 0; i < count; i++) started.push(await startOne(service, nextReplica(service)));
    await Promise.all(started.map((p) => startReady(service, p.replica, p)));
  }

  async function stopService(service: ServiceName, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const mine = procs.filter((p) => p.service === service);
    for (const p of mine) p.child.kill(signal);
    await Promise.all(mine.map((p) => p.exited));
    for (const p of mine) procs.splice(procs.indexOf(p), 1);
  }

  async function stop(): Promise<void> {
    const all = [...procs];
    for (const p of all) p.child.kill('SIGTERM');
    await Promise.all(all.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 25_000))])));
    for (const p of all) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    procs.length = 0;
    if (options.dropDatabases) {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      try {
        for (const url of Object.values(databases))
          await c.query(`drop database if exists "${new URL(url).pathname.slice(1)}" with (force)`);
      } finally {
        await c.end();
      }
    }
  }

  try {
    // Services start concurrently; the gateway waits for pki-enrollment's certificate by itself.
    await Promise.all(serviceNames.map((s) => startService(s)));
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    baseUrl: `https://127.0.0.1:${port}`,
    port,
    adminUsername,
    /** The folder of bundles the processes run; undefined when they run their sources. */
    bundleDir,
    /** The admin's password; empty when the admin was created by an earlier start whose password was not kept. */
    adminPassword,
    /** Whether this start generated the admin password (and, with a data directory, kept it). */
    adminPasswordGenerated,
    dataDir,
    namespace,
    databases,
    logDir,
    env: baseEnv,
    startService,
    stopService,
    stop,
    /** Kills one replica (SIGKILL by default: a crash, no graceful stop) and waits until it is gone. */
    killReplica: async (service: ServiceName, replica: number, signal: NodeJS.Signals = 'SIGKILL') => {
      const p = procs.find((x) => x.service === service && x.replica === replica);
      if (!p) throw new Error(`no ${service} replica ${replica}`);
      p.child.kill(signal);
      await p.exited;
      procs.splice(procs.indexOf(p), 1);
    },
    /** The HTTPS port of each running gateway replica, the first one's first. */
    gatewayPorts: () => procs.filter((p) => p.service === 'gateway').map((p) => p.port),
    /** The control port of each running fabric replica (routers' `ctrl.endpoint`), by replica number. */
    ctrlPorts: () =>
      procs
        .filter((p) => p.service === 'fabric')
        .sort((a, b) => a.replica - b.replica)
        .map((p) => ({ replica: p.replica, port: p.port })),
    /** Each process with its plain-HTTP health port (`/healthz`, `/readyz`, `/metrics`). */
    processes: () =>
      procs.map((p) => ({ service: p.service, replica: p.replica, pid: p.child.pid, healthPort: p.healthPort })),
  };
}

export type LocalCluster = Awaited<ReturnType<typeof startLocalCluster>>;

/** `--replicas gateway=2,auth=2` or `--replicas=…` from the command line. */
function replicasArgument(argv: string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--replicas') return argv[i + 1] ?? '';
    if (a.startsWith('--replicas=')) return a.slice('--replicas='.length);
  }
  return undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dataDir = resolve(process.env.ZITI_CLUSTER_DATA_DIR ?? join('data', 'cluster'));
  let replicas: Partial<Record<ServiceName, number>>;
  try {
    replicas = parseReplicas(replicasArgument(process.argv.slice(2)) ?? process.env.ZITI_CLUSTER_REPLICAS ?? '');
  } catch (err) {
    console.error(`npm run cluster: ${(err as Error).message}`);
    process.exit(2);
  }
  const port = Number(process.env.ZITI_PORT || 1280);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    console.error(`npm run cluster: ZITI_PORT=${process.env.ZITI_PORT} is not a port from 1 to 65535`);
    process.exit(2);
  }
  const cluster = await startLocalCluster({
    port,
    namespace: process.env.ZITI_CLUSTER_NAMESPACE ?? '',
    replicas,
    dataDir,
    logDir: join(dataDir, 'logs'),
    // Every documented setting of this environment reaches the processes (ZITI_AUTH_RATE_LIMIT, ...).
    configuration: process.env,
  }).catch((err: Error) => {
    console.error(`npm run cluster: ${err.message}`);
    process.exit(1);
  });
  const ports = cluster.gatewayPorts();
  // Each process's plain-HTTP listener, at the address it binds (loopback unless HEALTH_BIND says otherwise).
  const bind = cluster.env.HEALTH_BIND;
  const healthHost =
    !bind || bind === '0.0.0.0' || bind === '::' ? '127.0.0.1' : bind.includes(':') ? `[${bind}]` : bind;
  const width = Math.max(...cluster.processes().map((p) => `${p.service} #${p.replica}`.length));
  const lines = [
    '',
    `  cluster up: ${cluster.processes().length} processes (${serviceNames
      .map((s) => `${s} ×${cluster.processes().filter((p) => p.service === s).length}`)
      .join(', ')}), ${cluster.bundleDir ? 'each running its bundle' : 'from their TypeScript sources (tsx)'}`,
    ...serviceNames.flatMap((s) =>
      cluster
        .processes()
        .filter((p) => p.service === s)
        .map((p) => {
          const health = `http://${healthHost}:${p.healthPort}`;
          return `  ${`${p.service} #${p.replica}`.padEnd(width)}  pid ${String(p.pid).padEnd(7)} health ${health}/healthz  metrics ${health}/metrics`;
        }),
    ),
    ...ports.map(
      (p, i) =>
        `  gateway #${i}: https://localhost:${p}  (Client API https://localhost:${p}/edge/client/v1, Management API https://localhost:${p}/edge/management/v1)`,
    ),
    `  Log in:  ziti edge login localhost:${cluster.port} -u ${cluster.adminUsername} -p <password> -y`,
    `  admin password: ${
      !cluster.adminPassword
        ? `the one the admin was created with (not kept in ${dataDir})`
        : process.env.ZITI_ADMIN_PASSWORD
          ? `${cluster.adminPassword} (ZITI_ADMIN_PASSWORD)`
          : `${cluster.adminPassword} (${cluster.adminPasswordGenerated ? 'generated at this first start, ' : ''}kept in ${join(dataDir, 'admin-password')})`
    }`,
    `  secrets kept in ${dataDir} (mode 0600); logs in ${cluster.logDir}`,
    '',
  ];
  console.log(lines.join('\n'));
  const shutdown = async () => {
    await cluster.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
}
