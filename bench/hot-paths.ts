/**
 * `npm run bench -- hot-paths` (issue 32): the Edge API calls clients make most, against this
 * controller as `npm start` runs it (one process, PGlite), as the cluster (one replica of each
 * service on this machine's Postgres, Redis and NATS) and beside them the reference controller
 * (OpenZiti 1.1.9, `ziti controller run`), in the same run, with the same client code, on
 * 127.0.0.1 only:
 *
 * 1. `GET /edge/client/v1/current-identity` (a non-admin identity's session) at 64 connections for
 *    `BENCH_HOT_SECONDS` (8) after a `BENCH_HOT_WARMUP_SECONDS` (1) warm-up: req/s, p50, p99;
 * 2. password logins (`POST /authenticate?method=password`, 16 users in turn) at 16 connections for
 *    the same time: logins/s, and the p99 of `GET /current-identity` by 4 other sessions at 40/s
 *    from a process of their own (bench/session-reads.ts) during the storm;
 * 3. `POST /edge/management/v1/identities` (type User, an ott enrollment) at 16 connections,
 *    `BENCH_HOT_CREATES` (2,000) per round: creates/s and the seconds they took; then how long the
 *    controller stays busy after them (at most 90 s);
 * 4. client `GET /services?limit=100` of an identity that 200 services (`BENCH_HOT_SERVICES`) are
 *    visible to (one Dial service policy by role attribute) at 16 connections: req/s; and 200
 *    (`BENCH_HOT_SEQUENTIAL`) one at a time: their p50;
 * 5. `POST /edge/client/v1/sessions` (Dial) at 16 connections, every request a new (API session,
 *    service) pair (16 fresh logins per round × the 200 services; both controllers answer a repeated
 *    pair with the session it has), an edge router (never online: neither controller asks for one)
 *    shared through `#all` edge-router and service-edge-router policies: sessions/s;
 * 6. management `GET /identities?filter=name contains "-id-"&limit=10&offset=<deep>` once
 *    `BENCH_HOT_LIST_IDENTITIES` (4,000) identities match (the creates of 3, topped up untimed where
 *    fewer), offset 3/4 of them: p50 of `BENCH_HOT_LIST_REQUESTS` (50) one at a time;
 * 7. each controller's RSS once started and idle (the cluster: the sum of its service processes;
 *    Postgres, Redis and NATS are shared and not counted), and spawn → first answer (`/version`
 *    and the control port; the cluster: `startLocalCluster`, databases made and migrated included;
 *    `npm start` after `start.mjs --prepare`, as `npm ci` leaves it). Each is started alone.
 *
 * They run in the order 1, 2, 4, 5, 3, 6 (the creates leave work behind on ours). Every timed
 * scenario runs `BENCH_HOT_ROUNDS` (2) rounds over the controllers, the order reversed each round,
 * each phase once every controller's processes fell idle (bench/circuits.ts waitForIdle, at most
 * 90 s: none works off earlier load beside the one measured); the figures are the better round's,
 * per figure (rates the higher, latencies the lower); every round is recorded. The concurrent loads
 * are autocannon (its latencies are whole milliseconds), the one-at-a-time ones
 * bench/support/edge-api.ts (keep-alive, sent once). Nothing is validated beyond the status: rates
 * count 2xx answers; non-2xx answers, errors and phases without an answer are counted, printed and
 * recorded, and a run with any says so. Ratios are ours ÷ reference. Where `ziti` v1.1.9 is not
 * found (test/support/ziti-peers.ts findZiti), ours run alone and one line says why the reference
 * row was skipped. Every loop is bounded; every process started is stopped. Results:
 * bench/results/<date>-hot-paths.json.
 */
import { spawn } from 'node:child_process';
import autocannon from 'autocannon';
import { type LocalCluster } from '../deploy/local-cluster.ts';
import { type ZitiPeers, createZitiPeers, findZiti } from '../test/support/ziti-peers.ts';
import { waitForIdle } from './circuits.ts';
import {
  type ScenarioOptions,
  benchCluster,
  cpuTicks,
  gitState,
  latencyStats,
  load1,
  machine,
  pool,
  recordResult,
  root,
  rssMiB,
} from './common.ts';
import { sessionReads } from './login.ts';
import {
  type BenchController,
  type ControllerKind,
  clusterController,
  logNotesLine,
  referenceController,
  startNpmStart,
} from './support/controllers.ts';
import { EdgeApi } from './support/edge-api.ts';

export interface HotPathsOptions extends ScenarioOptions {
  /** Measured seconds of each duration-bounded phase (default 8). */
  seconds?: number;
  warmupSeconds?: number;
  /** Rounds over all controllers, in alternating order (default 2). */
  rounds?: number;
  /** Identity creates per round (default 2,000). */
  creates?: number;
  /** Services visible to the client (default 200). */
  services?: number;
  /** Identities the deep list runs over (default 4,000). */
  listIdentities?: number;
  /** One-at-a-time requests per round (services list 200, deep list 100). */
  sequential?: number;
  listRequests?: number;
  /** Runs the reference controller when the binary is found (default true). */
  reference?: boolean;
}

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

/** One timed load: rate, latencies, and what did not answer 2xx. */
interface Load {
  /** Answers received (any status). */
  operations: number;
  /** 2xx answers among them: the rate is theirs. */
  ok: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** CPU ms of the controller's own processes per operation (the cluster: its services, not Postgres/Redis/NATS). */
  controllerCpuMsPerOp: number;
  loadAverage1m: number;
  idleBefore: { seconds: number; settled: boolean };
}

interface Prepared {
  c: BenchController;
  api: EdgeApi;
  adminToken: string;
  /** A non-admin identity with the services visible, logged in. */
  clientToken: string;
  loginUsers: { username: string; password: string }[];
  readerTokens: string[];
  serviceIds: string[];
  setupSeconds: number;
  idleRssMiB: { process: string; rssMiB: number | undefined }[];
  startup: { spawnToFirstAnswerMs: number; beforeSpawnMs?: Record<string, number> } | undefined;
}

interface Rounds {
  currentIdentity: Load[];
  logins: (Load & { readsDuringStorm: { p50: number; p99: number; requests: number; non2xx: number } })[];
  creates: (Load & { busyAfter: Load['idleBefore'] })[];
  servicesList: (Load & { sequential: ReturnType<typeof latencyStats> & { non2xx: number } })[];
  sessions: Load[];
  deepList: (ReturnType<typeof latencyStats> & {
    non2xx: number;
    totalCount: number;
    offset: number;
    idleBefore: Load['idleBefore'];
    loadAverage1m: number;
  })[];
}

export async function benchHotPaths(options: HotPathsOptions = {}) {
  const o = {
    seconds: options.seconds ?? env('BENCH_HOT_SECONDS', 8),
    warmupSeconds: options.warmupSeconds ?? env('BENCH_HOT_WARMUP_SECONDS', 1),
    rounds: options.rounds ?? env('BENCH_HOT_ROUNDS', 2),
    creates: options.creates ?? env('BENCH_HOT_CREATES', 2000),
    services: options.services ?? env('BENCH_HOT_SERVICES', 200),
    listIdentities: options.listIdentities ?? env('BENCH_HOT_LIST_IDENTITIES', 4000),
    sequential: options.sequential ?? env('BENCH_HOT_SEQUENTIAL', 200),
    listRequests: options.listRequests ?? env('BENCH_HOT_LIST_REQUESTS', 50),
    readConnections: 64,
    connections: 16,
    loginUsers: 16,
    readRate: 40,
    setupConcurrency: 8,
    idleTimeoutMs: 90_000,
  };
  const tag = `bench-h-${Date.now().toString(36)}`;
  const loadAtStart = load1();
  // The tree the controllers are started from (a commit landing during the run must not be recorded instead).
  const git = gitState();
  const startedAt = performance.now();
  const found = options.reference === false ? { skipped: 'not asked for (reference: false)' } : findZiti();
  const referenceSkipped = 'skipped' in found ? found.skipped : undefined;
  const peers: ZitiPeers | undefined =
    'path' in found ? createZitiPeers({ ziti: found.path, prefix: 'bench-hot-' }) : undefined;
  const controllers: BenchController[] = [];
  const prepared: Prepared[] = [];
  let ownCluster: LocalCluster | undefined;
  try {
    // One at a time, so that each start is timed alone: npm start after what `npm ci` prepares,
    // the reference, the cluster.
    const prepareMs = await standalonePrepare();
    controllers.push(await startNpmStart());
    if (peers) controllers.push(await referenceController(peers));
    const t = performance.now();
    const cluster = options.cluster ?? (ownCluster = await benchCluster('h', { ZITI_AUTH_RATE_LIMIT: '0' }));
    const clusterStartMs = Math.round(performance.now() - t);
    const clusterC = await clusterController(cluster);
    if (!options.cluster) clusterC.startup = { spawnToFirstAnswerMs: clusterStartMs };
    controllers.splice(1, 0, clusterC); // embedded, cluster, reference
    for (const c of controllers)
      console.log(
        `hot-paths: ${c.label} started${c.startup ? ` in ${c.startup.spawnToFirstAnswerMs} ms` : ''} (${c.apiUrl})`,
      );

    // Idle RSS first, before anything was asked of them.
    const idleRss = new Map<ControllerKind, Prepared['idleRssMiB']>();
    for (const c of controllers) {
      await waitForIdle(c, { timeoutMs: o.idleTimeoutMs });
      idleRss.set(
        c.kind,
        c.processes().map((p) => ({ process: p.name, rssMiB: rssMiB(p.pid) })),
      );
    }

    const ready = await Promise.allSettled(controllers.map((c) => prepare(c, tag, o)));
    for (const [i, r] of ready.entries())
      if (r.status === 'fulfilled')
        prepared.push({ ...r.value, idleRssMiB: idleRss.get(r.value.c.kind)!, startup: controllers[i]!.startup });
    const unready = ready.find((r) => r.status === 'rejected');
    if (unready) throw (unready as PromiseRejectedResult).reason;
    for (const p of prepared) console.log(`hot-paths: ${p.c.label} set up in ${p.setupSeconds.toFixed(1)} s`);

    const rounds = new Map<ControllerKind, Rounds>(
      prepared.map((p) => [
        p.c.kind,
        { currentIdentity: [], logins: [], creates: [], servicesList: [], sessions: [], deepList: [] },
      ]),
    );
    /** Runs `phase` on every controller, `o.rounds` times, the order reversed each round. */
    const eachRound = async (name: string, phase: (p: Prepared, round: number) => Promise<string>) => {
      for (let round = 0; round < o.rounds; round++) {
        const order = round % 2 === 0 ? prepared : [...prepared].reverse();
        for (const p of order)
          console.log(`  ${name} · round ${round + 1} · ${p.c.label.padEnd(16)} ${await phase(p, round)}`);
      }
    };

    /** Every controller idle (at most `idleTimeoutMs`): none works off earlier load beside the one measured. */
    const allIdle = async (): Promise<Load['idleBefore']> => {
      const t = performance.now();
      const all = await Promise.all(prepared.map((q) => waitForIdle(q.c, { timeoutMs: o.idleTimeoutMs })));
      return { seconds: +((performance.now() - t) / 1000).toFixed(1), settled: all.every((x) => x.settled) };
    };

    // 1. current-identity at 64 connections.
    await eachRound('current-identity', async (p) => {
      const url = `${p.c.apiUrl}/edge/client/v1/current-identity`;
      const headers = { 'zt-session': p.clientToken };
      const load = await timedLoad(p, o, allIdle, async (duration) =>
        autocannon({ url, connections: o.readConnections, duration, headers }),
      );
      rounds.get(p.c.kind)!.currentIdentity.push(load);
      return fmtLoad(load);
    });

    // 2. Logins at 16 connections, other sessions' reads beside them.
    await eachRound('logins', async (p) => {
      const requests = p.loginUsers.map((u) => ({
        method: 'POST' as const,
        path: '/edge/client/v1/authenticate?method=password',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: u.username, password: u.password }),
      }));
      const run = (duration: number) => autocannon({ url: p.c.apiUrl, connections: o.connections, duration, requests });
      const idleBefore = await allIdle();
      // The reads warm up with the storm, then both are measured over the same seconds.
      const reads = sessionReads(p.c.apiUrl, o.readRate, o.warmupSeconds, o.seconds, p.readerTokens);
      await reads.ready;
      if (o.warmupSeconds > 0) await run(o.warmupSeconds);
      const load = await measured(p, idleBefore, () => run(o.seconds));
      const r = await reads.result;
      const readsDuringStorm = {
        p50: r.latency.p50,
        p99: r.latency.p99,
        requests: r.requests.total,
        non2xx: r.non2xx + r.errors + r.timeouts,
      };
      rounds.get(p.c.kind)!.logins.push({ ...load, readsDuringStorm });
      return `${fmtLoad(load)} | reads beside: p99 ${readsDuringStorm.p99} ms${readsDuringStorm.non2xx ? ` (${readsDuringStorm.non2xx} not 2xx)` : ''}`;
    });

    // 4. The client's services, 100 a page, 200 visible.
    await eachRound('services?limit=100', async (p) => {
      const url = `${p.c.apiUrl}/edge/client/v1/services?limit=100`;
      const headers = { 'zt-session': p.clientToken };
      const load = await timedLoad(p, o, allIdle, async (duration) =>
        autocannon({ url, connections: o.connections, duration, headers }),
      );
      const sequential = await oneAtATime(o.sequential, () =>
        p.api.request('client', '/services?limit=100', { token: p.clientToken, noRetry: true }),
      );
      rounds.get(p.c.kind)!.servicesList.push({ ...load, sequential });
      return `${fmtLoad(load)} | one at a time p50 ${sequential.p50} ms`;
    });

    // 5. New Dial sessions: fresh API sessions each round, every request a new (API session, service) pair.
    await eachRound('sessions', async (p) => {
      const tokens = await Promise.all(p.loginUsers.map((u) => p.api.login(u.username, u.password)));
      const requests = Array.from({ length: tokens.length * p.serviceIds.length }, (_, i) => ({
        method: 'POST' as const,
        path: '/edge/client/v1/sessions',
        headers: { 'content-type': 'application/json', 'zt-session': tokens[i % tokens.length]! },
        body: JSON.stringify({ serviceId: p.serviceIds[Math.floor(i / tokens.length)], type: 'Dial' }),
      }));
      const load = await timedLoad(p, { ...o, warmupSeconds: 0 }, allIdle, async () =>
        amountRun(p, o.connections, requests),
      );
      rounds.get(p.c.kind)!.sessions.push(load);
      return fmtLoad(load);
    });

    // 3. Identity creates, a fixed number per round.
    await eachRound('creates', async (p, round) => {
      const requests = Array.from({ length: o.creates }, (_, i) => ({
        method: 'POST' as const,
        path: '/edge/management/v1/identities',
        headers: { 'content-type': 'application/json', 'zt-session': p.adminToken },
        body: JSON.stringify({
          name: `${tag}-id-r${round}-${i}`,
          type: 'User',
          isAdmin: false,
          enrollment: { ott: true },
        }),
      }));
      const load = await timedLoad(p, { ...o, warmupSeconds: 0 }, allIdle, async () =>
        amountRun(p, o.connections, requests),
      );
      // How long the controller stays busy after them (ours: event consumers, the audit trail).
      const busyAfter = await waitForIdle(p.c, { timeoutMs: o.idleTimeoutMs });
      rounds.get(p.c.kind)!.creates.push({ ...load, busyAfter });
      return `${fmtLoad(load)} | ${load.seconds} s, busy ${busyAfter.seconds}${busyAfter.settled ? '' : '+'} s after`;
    });

    // 6. A deep page of a management list with a filter.
    const filter = encodeURIComponent('name contains "-id-"');
    for (const p of prepared) {
      const have = await p.api.count(`/identities?filter=${filter}&limit=1`, p.adminToken);
      const missing = Math.max(0, o.listIdentities - have);
      if (missing > 0) {
        const made = await pool(missing, o.setupConcurrency, async (i) => {
          await p.api.create('/identities', p.adminToken, { name: `${tag}-id-top-${i}`, type: 'User', isAdmin: false });
          return true;
        });
        if (made.errors) throw new Error(`${p.c.label}: ${made.errors} top-up identities failed: ${made.firstError}`);
      }
      console.log(
        `  deep list · ${p.c.label}: ${have} identities matched, ${missing} created to reach ${o.listIdentities}`,
      );
    }
    await eachRound('deep list', async (p) => {
      const total = await p.api.count(`/identities?filter=${filter}&limit=1`, p.adminToken);
      const offset = Math.floor((total * 3) / 4);
      const path = `/identities?filter=${filter}&limit=10&offset=${offset}`;
      const idleBefore = await allIdle();
      const loadAverage1m = load1();
      for (let i = 0; i < 5; i++) await p.api.request('management', path, { token: p.adminToken, noRetry: true });
      const stats = await oneAtATime(o.listRequests, () =>
        p.api.request('management', path, { token: p.adminToken, noRetry: true }),
      );
      rounds.get(p.c.kind)!.deepList.push({ ...stats, totalCount: total, offset, idleBefore, loadAverage1m });
      return `offset ${offset} of ${total}: p50 ${stats.p50} ms p99 ${stats.p99} ms${stats.non2xx ? ` (${stats.non2xx} not 2xx)` : ''}`;
    });

    const results = prepared.map((p) => {
      const rs = rounds.get(p.c.kind)!;
      return {
        controller: p.c.label,
        kind: p.c.kind,
        setupSeconds: +p.setupSeconds.toFixed(1),
        figures: figuresOf(p, rs),
        rounds: rs,
        rssMiB: { idle: p.idleRssMiB, atEnd: p.c.processes().map((x) => ({ process: x.name, rssMiB: rssMiB(x.pid) })) },
        startup: p.startup,
        logs: p.c.logNotes(),
      };
    });
    const reference = results.find((r) => r.kind === 'reference');
    const ratios = Object.fromEntries(
      results
        .filter((r) => r.kind !== 'reference')
        .map((r) => [r.kind, reference ? ratiosOf(r.figures, reference.figures) : undefined]),
    );
    const loadAtEnd = load1();
    const wallSeconds = Math.round((performance.now() - startedAt) / 1000);
    printTable(results, { ...o, loadAtStart, loadAtEnd, referenceSkipped, wallSeconds });

    const notOk = results.flatMap((r) => [
      ...(r.figures.notOk > 0 ? [`${r.controller}: ${r.figures.notOk} not 2xx`] : []),
      ...(r.figures.unansweredPhases > 0
        ? [`${r.controller}: ${r.figures.unansweredPhases} timed phase(s) without a single answer`]
        : []),
    ]);
    const summary = {
      date: new Date().toISOString(),
      scenario: 'hot-paths',
      machine: machine(),
      git,
      parameters: o,
      loadAverage1m: { atStart: loadAtStart, atEnd: loadAtEnd },
      wallSeconds,
      standalonePrepareMs: prepareMs,
      figuresAre: 'the better of the rounds, per figure (rates the higher, latencies and seconds the lower)',
      reference: reference
        ? { version: 'v1.1.9', binary: 'path' in found ? found.path : undefined }
        : { skipped: referenceSkipped },
      results,
      ratiosOursOverReference: ratios,
      notOk,
    };
    await recordResult('hot-paths', summary, options.record ?? true);
    if (notOk.length > 0) console.log(`hot-paths: this run had answers that were not 2xx: ${notOk.join('; ')}`);
    return summary;
  } finally {
    for (const p of prepared) p.api.close();
    // The cluster's stop is its own (below, when this scenario started it).
    await Promise.allSettled(controllers.map((c) => c.stop()));
    await peers?.cleanup();
    await ownCluster?.stop();
  }
}

/** What `npm ci` runs last (`start.mjs --prepare`: the bundle, the template databases), so `npm start` is a first start of a fresh install. */
async function standalonePrepare(): Promise<number> {
  const t = performance.now();
  const child = spawn(process.execPath, ['apps/standalone/start.mjs', '--prepare'], { cwd: root, stdio: 'ignore' });
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`start.mjs --prepare exited with ${code}`);
  return Math.round(performance.now() - t);
}

/**
 * Untimed, on one controller: the admin's session; 16 login users, 4 readers (logged in) and the
 * client (logged in), all with updb passwords and one role attribute; the services, a Dial policy
 * for the attribute, an edge router and `#all` edge-router and service-edge-router policies; then
 * waits until every one of them sees every service (ours: the views follow events).
 */
async function prepare(
  c: BenchController,
  tag: string,
  o: { services: number; loginUsers: number; setupConcurrency: number },
): Promise<Omit<Prepared, 'idleRssMiB' | 'startup'>> {
  const t = performance.now();
  const api = new EdgeApi(c.apiUrl, c.ca, { maxSockets: o.setupConcurrency + 2 });
  try {
    const admin = await api.login(c.adminUsername, c.adminPassword);
    const create = (path: string, body: unknown) => api.create(path, admin, body);
    const user = async (name: string) => {
      const password = `pw-${name}`;
      const identityId = await create('/identities', {
        name,
        type: 'User',
        isAdmin: false,
        roleAttributes: [`${tag}-clients`],
      });
      await create('/authenticators', { method: 'updb', identityId, username: name, password });
      return { username: name, password };
    };
    const users = await Promise.all([
      ...Array.from({ length: o.loginUsers }, (_, i) => user(`${tag}-login-${i}`)),
      ...Array.from({ length: 4 }, (_, i) => user(`${tag}-reader-${i}`)),
      user(`${tag}-client`),
    ]);
    const loginUsers = users.slice(0, o.loginUsers);
    const serviceIds: string[] = new Array(o.services);
    const made = await pool(o.services, o.setupConcurrency, async (i) => {
      serviceIds[i] = await create('/services', {
        name: `${tag}-svc-${String(i).padStart(4, '0')}`,
        encryptionRequired: true,
        roleAttributes: [`${tag}-svc`],
      });
      return true;
    });
    if (made.errors) throw new Error(`${c.label}: ${made.errors} services failed: ${made.firstError}`);
    await create('/service-policies', {
      name: `${tag}-dial`,
      type: 'Dial',
      semantic: 'AnyOf',
      identityRoles: [`#${tag}-clients`],
      serviceRoles: [`#${tag}-svc`],
    });
    const routerId = await create('/edge-routers', { name: `${tag}-router`, roleAttributes: [`${tag}-routers`] });
    await create('/edge-router-policies', {
      name: `${tag}-erp`,
      semantic: 'AnyOf',
      identityRoles: ['#all'],
      edgeRouterRoles: [`@${routerId}`],
    });
    await create('/service-edge-router-policies', {
      name: `${tag}-serp`,
      semantic: 'AnyOf',
      serviceRoles: ['#all'],
      edgeRouterRoles: ['#all'],
    });
    // Every user's view holds every service, and the last one takes a Dial session.
    const tokens = await Promise.all(users.map((u) => api.login(u.username, u.password)));
    const deadline = Date.now() + 120_000;
    for (const token of tokens) {
      for (;;) {
        const listed = await api.request('client', '/services?limit=1', { token });
        const session =
          listed.status === 200 && Number(listed.json?.meta?.pagination?.totalCount) === o.services
            ? await api.request('client', '/sessions', {
                method: 'POST',
                token,
                body: { serviceId: serviceIds.at(-1), type: 'Dial' },
              })
            : undefined;
        if (session && (session.status === 200 || session.status === 201)) break;
        if (Date.now() > deadline)
          throw new Error(
            `${c.label}: the services did not become visible and dialable within 120 s: ${listed.status} ${(session ?? listed).text.slice(0, 300)}`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    return {
      c,
      api,
      adminToken: admin,
      clientToken: tokens.at(-1)!,
      loginUsers,
      readerTokens: tokens.slice(o.loginUsers, o.loginUsers + 4),
      serviceIds,
      setupSeconds: (performance.now() - t) / 1000,
    };
  } catch (err) {
    api.close();
    throw err;
  }
}

/** CPU ticks (1/100 s) of the controller's own processes. */
function controllerTicks(c: BenchController): number {
  return c.processes().reduce((sum, p) => sum + ((p.pid ? cpuTicks(p.pid) : 0) ?? 0), 0);
}

/** Waits for the controllers to fall idle, warms up (`warmupSeconds`, when above 0), then measures `run`. */
async function timedLoad(
  p: Prepared,
  o: { warmupSeconds: number; seconds: number },
  idle: () => Promise<Load['idleBefore']>,
  run: (durationSeconds: number) => Promise<autocannon.Result>,
): Promise<Load> {
  const idleBefore = await idle();
  if (o.warmupSeconds > 0) await run(o.warmupSeconds);
  return measured(p, idleBefore, () => run(o.seconds));
}

async function measured(p: Prepared, idleBefore: Load['idleBefore'], run: () => Promise<autocannon.Result>) {
  const loadAverage1m = load1();
  const ticks = controllerTicks(p.c);
  const r = await run();
  const cpuMs = (controllerTicks(p.c) - ticks) * 10;
  const operations = r.requests.total;
  const seconds = +(r.duration || 1).toFixed(3);
  // Rates count the 2xx answers only (the reference sheds a login storm with 429s).
  const ok = Math.max(0, operations - r.non2xx);
  const statusCodes: Record<string, number> = {};
  for (const [code, v] of Object.entries(r.statusCodeStats ?? {})) statusCodes[code] = v.count ?? 0;
  return {
    operations,
    ok,
    seconds,
    perSecond: +(ok / seconds).toFixed(1),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    statusCodes,
    controllerCpuMsPerOp: operations > 0 ? +(cpuMs / operations).toFixed(3) : 0,
    loadAverage1m,
    idleBefore,
  };
}

/** Exactly `requests.length` requests, each sent once, `connections` in flight. */
function amountRun(p: Prepared, connections: number, requests: autocannon.Request[]) {
  let next = 0;
  return autocannon({
    url: p.c.apiUrl,
    connections,
    amount: requests.length,
    // `amount` is noticed on the sampling tick: at the default 1 s a run's duration is rounded up.
    sampleInt: 10,
    requests: [{ method: 'POST', setupRequest: () => requests[next++ % requests.length]! }],
  });
}

/** `count` calls one after the other: their latency stats and how many did not answer 2xx. */
async function oneAtATime(count: number, call: () => Promise<{ status: number }>) {
  let non2xx = 0;
  const r = await pool(count, 1, async () => {
    const answer = await call();
    if (answer.status < 200 || answer.status > 299) non2xx++;
    return true;
  });
  return { ...latencyStats(r.latencies), non2xx: non2xx + r.errors };
}

/** The better round per figure: rates the higher, latencies and seconds the lower. */
function figuresOf(p: Prepared, rs: Rounds) {
  const max = (xs: number[]) => (xs.length ? Math.max(...xs) : Number.NaN);
  const min = (xs: number[]) => (xs.length ? Math.min(...xs) : Number.NaN);
  const loads = [...rs.currentIdentity, ...rs.logins, ...rs.creates, ...rs.servicesList, ...rs.sessions];
  const unansweredPhases = loads.filter((x) => x.operations === 0).length;
  const notOk =
    loads.reduce((s, x) => s + x.non2xx + x.errors, 0) +
    rs.logins.reduce((s, x) => s + x.readsDuringStorm.non2xx, 0) +
    rs.servicesList.reduce((s, x) => s + x.sequential.non2xx, 0) +
    rs.deepList.reduce((s, x) => s + x.non2xx, 0);
  return {
    currentIdentityPerSecond: max(rs.currentIdentity.map((x) => x.perSecond)),
    currentIdentityP50: min(rs.currentIdentity.map((x) => x.p50)),
    currentIdentityP99: min(rs.currentIdentity.map((x) => x.p99)),
    loginsPerSecond: max(rs.logins.map((x) => x.perSecond)),
    loginP99: min(rs.logins.map((x) => x.p99)),
    readP99DuringLogins: min(rs.logins.map((x) => x.readsDuringStorm.p99)),
    createsPerSecond: max(rs.creates.map((x) => x.perSecond)),
    createsSeconds: min(rs.creates.map((x) => x.seconds)),
    servicesListPerSecond: max(rs.servicesList.map((x) => x.perSecond)),
    servicesListSequentialP50: min(rs.servicesList.map((x) => x.sequential.p50)),
    sessionsPerSecond: max(rs.sessions.map((x) => x.perSecond)),
    deepListP50: min(rs.deepList.map((x) => x.p50)),
    idleRssMiB: p.idleRssMiB.reduce((s, x) => s + (x.rssMiB ?? 0), 0),
    spawnToFirstAnswerMs: p.startup?.spawnToFirstAnswerMs ?? Number.NaN,
    notOk,
    unansweredPhases,
  };
}

type Figures = ReturnType<typeof figuresOf>;

/** The rows of the table: label, figure, and whether higher is better. */
const rows: { label: string; key: Exclude<keyof Figures, 'notOk' | 'unansweredPhases'>; higher: boolean }[] = [
  { label: 'current-identity req/s (64 c.)', key: 'currentIdentityPerSecond', higher: true },
  { label: 'current-identity p50 ms', key: 'currentIdentityP50', higher: false },
  { label: 'current-identity p99 ms', key: 'currentIdentityP99', higher: false },
  { label: 'logins/s (16 c.)', key: 'loginsPerSecond', higher: true },
  { label: 'login p99 ms', key: 'loginP99', higher: false },
  { label: 'reads p99 ms during logins', key: 'readP99DuringLogins', higher: false },
  { label: 'identity creates/s (16 c.)', key: 'createsPerSecond', higher: true },
  { label: 'identity creates: seconds', key: 'createsSeconds', higher: false },
  { label: 'services?limit=100 req/s (16 c.)', key: 'servicesListPerSecond', higher: true },
  { label: 'services?limit=100 1-at-a-time p50 ms', key: 'servicesListSequentialP50', higher: false },
  { label: 'Dial sessions/s (16 c.)', key: 'sessionsPerSecond', higher: true },
  { label: 'deep identities list p50 ms', key: 'deepListP50', higher: false },
  { label: 'idle RSS MiB', key: 'idleRssMiB', higher: false },
  { label: 'spawn → first answer ms', key: 'spawnToFirstAnswerMs', higher: false },
];

/** Ours ÷ reference per figure (rates: above 1 is faster; latencies, seconds, MiB: above 1 is more). */
function ratiosOf(ours: Figures, ref: Figures) {
  return Object.fromEntries(
    rows.map((r) => [
      r.key,
      ref[r.key] > 0 && Number.isFinite(ours[r.key]) ? +(ours[r.key] / ref[r.key]).toFixed(3) : null,
    ]),
  );
}

function fmtLoad(x: Load): string {
  const bad = x.non2xx + x.errors;
  if (x.operations === 0) return `no answer within the phase${x.idleBefore.settled ? '' : ' (not idle before)'}`;
  return `${String(Math.round(x.perSecond)).padStart(6)}/s p50 ${x.p50} p99 ${x.p99} ms, ${x.controllerCpuMsPerOp} ms CPU/op${bad ? ` (${bad} not 2xx: ${JSON.stringify(x.statusCodes)})` : ''}${x.idleBefore.settled ? '' : ' (not idle before)'}`;
}

function printTable(
  results: {
    controller: string;
    kind: ControllerKind;
    figures: Figures;
    logs: ReturnType<BenchController['logNotes']>;
  }[],
  o: {
    seconds: number;
    rounds: number;
    creates: number;
    services: number;
    listIdentities: number;
    loadAtStart: number;
    loadAtEnd: number;
    wallSeconds: number;
    referenceSkipped?: string | undefined;
  },
) {
  const order: ControllerKind[] = ['reference', 'embedded', 'cluster'];
  const shown = order.map((k) => results.find((r) => r.kind === k)).filter((r) => r !== undefined);
  const ref = results.find((r) => r.kind === 'reference');
  const ours = shown.filter((r) => r.kind !== 'reference');
  const cell = (v: number) => (Number.isFinite(v) ? String(+v.toFixed(v >= 100 ? 0 : 2)) : '–');
  console.log(
    `\nhot-paths: ${o.rounds} rounds, better round per figure; ${o.seconds} s phases, ${o.creates} creates/round, ${o.services} services, deep list over ${o.listIdentities}; load ${o.loadAtStart} → ${o.loadAtEnd}; ${o.wallSeconds} s in all`,
  );
  const head = [
    'figure'.padEnd(40),
    ...shown.map((r) => r.controller.padStart(16)),
    ...(ref ? ours.map((r) => `${r.kind} ÷ ref`.padStart(16)) : []),
  ];
  console.log(head.join(' '));
  for (const row of rows) {
    const cells = [
      row.label.padEnd(40),
      ...shown.map((r) => cell(r.figures[row.key]).padStart(16)),
      ...(ref
        ? ours.map((r) => {
            const a = r.figures[row.key];
            const b = ref.figures[row.key];
            return (b > 0 && Number.isFinite(a) ? (a / b).toFixed(3) : '–').padStart(16);
          })
        : []),
    ];
    console.log(cells.join(' '));
  }
  console.log(
    `${'answers not 2xx (all phases)'.padEnd(40)} ${shown.map((r) => String(r.figures.notOk).padStart(16)).join(' ')}`,
  );
  for (const r of results) {
    const line = logNotesLine(r.controller, r.logs);
    if (line) console.log(line);
  }
  if (o.referenceSkipped) console.log(`reference row skipped: ${o.referenceSkipped}`);
}
