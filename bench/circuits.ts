/**
 * `npm run bench -- circuits` (issue 30 §8): what one edge router asks of its controller, timed
 * through that router's control channel — the bind rate (CreateTerminatorV2: a hosting SDK binds)
 * of `BENCH_CIRCUITS_HOSTS` (1,000) hosting identities at 16 in flight, and dials (CreateCircuitV2:
 * a client dials; the controller routes the circuit through the same router and answers) per second
 * with their p50/p99 at 16 in flight (`BENCH_CIRCUITS_DIALS`, 2,000) and one at a time
 * (`BENCH_CIRCUITS_SEQUENTIAL`, 200) — for this controller as `npm start` runs it (its own process)
 * and as the cluster, beside the reference controller (OpenZiti 1.1.9) in the same run, with the same
 * client code, rounds (`BENCH_CIRCUITS_ROUNDS`, 2) in alternating order.
 *
 * The router is bench/support/sim-router.ts, a control-channel simulator with a real router identity
 * (`ziti router enroll` where the binary is found): each controller admits it by certificate as it
 * would a real 1.1.9 router. Setup (not timed), on each controller: a CA of this run, registered and
 * verified (the reference accepts a certificate authenticator only when it chains to a CA it knows),
 * then per hosting identity a password (updb) and a certificate authenticator, a login and a Bind
 * session; one service for all of them, another with one host (bound once) and one client for the
 * dials; policies giving all of them the router. Routers report the fingerprints of the certificates
 * an SDK presented; the controllers check that one is among the API session's identity's, so the
 * simulator reports each identity's own. After each bind round the terminators are counted through
 * `GET /terminators` and removed again (RemoveTerminatorsRequest); every dial's circuit is torn down
 * right after its answer (a Fault, not timed). Before each timed phase the scenario waits (at most
 * 2 minutes) until that controller's processes are idle (under 10 % of a core for a second), so
 * nothing left over from the setup or the phase before (ours: event consumers, the audit trail) is
 * timed with it. A failed bind or dial, or a count that differs, fails
 * the scenario (after its figures are recorded).
 *
 * Where `ziti` v1.1.9 is not found (test/support/ziti-peers.ts findZiti), the reference row is
 * skipped with one line saying why and ours run alone (their router enrolled through the erott API).
 * Loopback only; every loop bounded; every process started is stopped. Results go to
 * bench/results/<date>-circuits.json; there are no floors yet: ratios are ours ÷ reference.
 */
import { X509Certificate, randomBytes, randomUUID } from 'node:crypto';
import { type LocalCluster } from '../deploy/local-cluster.ts';
import { issueServerCertificate } from '@ziti/x509';
import { makeTestCa, verificationCertificate } from '../services/pki-enrollment/test/support.ts';
import { type ZitiPeers, createZitiPeers, findZiti } from '../test/support/ziti-peers.ts';
import {
  type ScenarioOptions,
  benchCluster,
  cpuTicks,
  gitState,
  latencyStats,
  load1,
  machine,
  pidsNamed,
  pool,
  recordResult,
  rssMiB,
} from './common.ts';
import {
  type BenchController,
  type ControllerKind,
  type LogNotes,
  clusterController,
  enrollRouter,
  logNotesLine,
  referenceController,
  startNpmStart,
} from './support/controllers.ts';
import { EdgeApi } from './support/edge-api.ts';
import { SimRouter } from './support/sim-router.ts';

export interface CircuitsOptions extends ScenarioOptions {
  /** Hosting identities, each binding once per round (default 1,000). */
  hosts?: number;
  bindConcurrency?: number;
  /** Dials at `dialConcurrency` in flight per round (default 2,000 at 16). */
  dials?: number;
  dialConcurrency?: number;
  /** Dials one at a time per round (default 200). */
  sequentialDials?: number;
  /** Rounds over all controllers, in alternating order (default 2). */
  rounds?: number;
  /** Untimed dials (and 1 % of the binds) per controller before the first round (default 50). */
  warmupDials?: number;
  /** Setup calls in flight per controller (default 8). */
  setupConcurrency?: number;
  /** Runs the reference controller when the binary is found (default true). */
  reference?: boolean;
  /** The window over which a controller must stay idle before a phase is timed (default 1 s). */
  idleWindowMs?: number;
}

/** One identity as the router sees it: its tokens and the fingerprint of its certificate. */
export interface EdgeUser {
  identityId: string;
  apiSessionToken: string;
  sessionToken: string;
  fingerprint: string;
}

export interface Prepared {
  controller: BenchController;
  api: EdgeApi;
  adminToken: string;
  sim: SimRouter;
  routerId: string;
  enrolledWith: string;
  bindServiceId: string;
  dialServiceId: string;
  hosts: EdgeUser[];
  client: EdgeUser;
  setupSeconds: number;
}

export interface Phase {
  operations: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  firstError?: string;
  cpuSeconds: Record<string, number>;
  loadAverage1m: number;
}

/** Waited for the controller to fall idle: how long, and whether it did before the deadline. */
interface Idle {
  seconds: number;
  settled: boolean;
}

interface RoundResult {
  round: number;
  position: number;
  /** How long the controller took to fall idle before each phase (and whether it did in time). */
  idleBefore: { binds: Idle; dials: Idle; sequentialDials: Idle };
  binds: Phase & { terminatorsListed: number; terminatorsAfterRemoval: number };
  dials: Phase;
  sequentialDials: Phase;
}

type Figures = ReturnType<typeof pooled>;

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

export async function benchCircuits(options: CircuitsOptions = {}) {
  const o = {
    hosts: options.hosts ?? env('BENCH_CIRCUITS_HOSTS', 1000),
    bindConcurrency: options.bindConcurrency ?? 16,
    dials: options.dials ?? env('BENCH_CIRCUITS_DIALS', 2000),
    dialConcurrency: options.dialConcurrency ?? 16,
    sequentialDials: options.sequentialDials ?? env('BENCH_CIRCUITS_SEQUENTIAL', 200),
    rounds: options.rounds ?? env('BENCH_CIRCUITS_ROUNDS', 2),
    warmupDials: options.warmupDials ?? 50,
    setupConcurrency: options.setupConcurrency ?? 8,
    idleWindowMs: options.idleWindowMs ?? 1000,
  };
  const tag = `bench-c-${Date.now().toString(36)}`;
  const loadAtStart = load1();
  return withPreparedControllers(
    { ...options, tag, hosts: o.hosts, setupConcurrency: o.setupConcurrency, clusterName: 'c' },
    async ({ prepared, found, referenceSkipped }) => {
      for (const p of prepared)
        console.log(
          `circuits: ${p.controller.label} ready in ${p.setupSeconds.toFixed(1)} s (router ${p.routerId}, ${p.enrolledWith}; ${p.hosts.length} hosts bound-to-be, 1 dial terminator)`,
        );

      // Warm-up, not timed: some dials and a few binds (removed again) on each.
      for (const p of prepared) {
        await dialPhase(p, o.warmupDials, 4, 'warm-up');
        const some = p.hosts.slice(0, Math.max(1, Math.ceil(p.hosts.length / 100)));
        const ids = some.map(() => randomUUID());
        await pool(some.length, 4, async (i) => (await p.sim.bind(bindOf(some[i]!, ids[i]!))).ok);
        await p.sim.removeTerminators(ids);
      }

      const rounds = new Map<ControllerKind, RoundResult[]>(prepared.map((p) => [p.controller.kind, []]));
      for (let round = 0; round < o.rounds; round++) {
        const order = round % 2 === 0 ? prepared : [...prepared].reverse();
        for (const [position, p] of order.entries()) {
          // What the setup or the previous phase left to do (ours: event consumers, the audit trail of
          // the terminators made and removed) is done before the next phase is timed.
          const idle = [await waitForIdle(p.controller, { windowMs: o.idleWindowMs })];
          const binds = await bindPhase(p, o.bindConcurrency);
          idle.push(await waitForIdle(p.controller, { windowMs: o.idleWindowMs }));
          const dials = await dialPhase(p, o.dials, o.dialConcurrency, 'concurrent');
          idle.push(await waitForIdle(p.controller, { windowMs: o.idleWindowMs }));
          const sequentialDials = await dialPhase(p, o.sequentialDials, 1, 'sequential');
          rounds.get(p.controller.kind)!.push({
            round: round + 1,
            position: position + 1,
            idleBefore: { binds: idle[0]!, dials: idle[1]!, sequentialDials: idle[2]! },
            binds,
            dials,
            sequentialDials,
          });
          console.log(
            `  round ${round + 1} · ${p.controller.label.padEnd(16)} binds ${fmtPhase(binds)} | dials ${fmtPhase(dials)} | one at a time p50 ${sequentialDials.p50} ms (idle after ${idle.map((x) => `${x.seconds}${x.settled ? '' : '!'}`).join('/')} s)`,
          );
        }
      }

      const results = prepared.map((p) => {
        const rs = rounds.get(p.controller.kind)!;
        return {
          controller: p.controller.label,
          kind: p.controller.kind,
          routerId: p.routerId,
          routerEnrolledWith: p.enrolledWith,
          setupSeconds: +p.setupSeconds.toFixed(1),
          figures: pooled(rs),
          rounds: rs,
          router: { ...p.sim.stats, apiSessionsKnown: p.sim.apiSessions.size, closed: p.sim.closed },
          rssMiB: p.controller.processes().map((x) => ({ process: x.name, rssMiB: rssMiB(x.pid) })),
          logs: p.controller.logNotes(),
        };
      });
      const reference = results.find((r) => r.kind === 'reference');
      const ratios = Object.fromEntries(
        results
          .filter((r) => r.kind !== 'reference')
          .map((r) => [r.kind, reference ? ratiosOf(r.figures, reference.figures) : undefined]),
      );
      printTable(results, ratios, { ...o, loadAtStart, loadAtEnd: load1(), referenceSkipped });

      const summary = {
        date: new Date().toISOString(),
        scenario: 'circuits',
        machine: machine(),
        git: gitState(),
        parameters: o,
        loadAverage1m: { atStart: loadAtStart, atEnd: load1() },
        reference: reference
          ? { version: 'v1.1.9', binary: 'path' in found ? found.path : undefined }
          : { skipped: referenceSkipped },
        results,
        ratiosOursOverReference: ratios,
      };
      await recordResult('circuits', summary, options.record ?? true);

      const problems = results.flatMap((r) =>
        r.rounds.flatMap((x) => [
          ...(x.binds.errors
            ? [`${r.controller}: ${x.binds.errors} binds failed in round ${x.round} (${x.binds.firstError})`]
            : []),
          ...(x.binds.terminatorsListed !== o.hosts
            ? [
                `${r.controller}: GET /terminators listed ${x.binds.terminatorsListed} of ${o.hosts} in round ${x.round}`,
              ]
            : []),
          ...(x.binds.terminatorsAfterRemoval !== 0
            ? [`${r.controller}: ${x.binds.terminatorsAfterRemoval} terminators left after removal in round ${x.round}`]
            : []),
          ...[x.dials, x.sequentialDials]
            .filter((d) => d.errors > 0)
            .map((d) => `${r.controller}: ${d.errors} dials failed in round ${x.round} (${d.firstError})`),
        ]),
      );
      if (problems.length > 0) throw new Error(`circuits failed:\n  ${problems.join('\n  ')}`);
      return summary;
    },
  );
}

/**
 * The controllers of a run side by side (`npm start`, the cluster, the reference when its binary is
 * found), each prepared (`prepare`) with the same CA and identities, handed to `run`, and every one
 * stopped afterwards, whatever happened. Each is measured while the others idle.
 */
export async function withPreparedControllers<T>(
  o: ScenarioOptions & {
    tag: string;
    hosts: number;
    setupConcurrency: number;
    /** The bench cluster's name (its databases' suffix). */
    clusterName: string;
    reference?: boolean;
  },
  run: (ctx: {
    prepared: Prepared[];
    found: ReturnType<typeof findZiti>;
    referenceSkipped: string | undefined;
  }) => Promise<T>,
): Promise<T> {
  const found = o.reference === false ? { skipped: 'not asked for (reference: false)' } : findZiti();
  const referenceSkipped = 'skipped' in found ? found.skipped : undefined;
  const peers: ZitiPeers | undefined =
    'path' in found ? createZitiPeers({ ziti: found.path, prefix: `${o.tag}-` }) : undefined;
  const controllers: BenchController[] = [];
  const prepared: Prepared[] = [];
  let ownCluster: LocalCluster | undefined;
  try {
    const started = await Promise.allSettled([
      startNpmStart(),
      (async () => {
        const cluster = o.cluster ?? (ownCluster = await benchCluster(o.clusterName, { ZITI_AUTH_RATE_LIMIT: '0' }));
        return clusterController(cluster);
      })(),
      ...(peers ? [referenceController(peers)] : []),
    ]);
    for (const s of started) if (s.status === 'fulfilled') controllers.push(s.value);
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;

    // One CA of this run signs every identity's certificate; each controller is told of it.
    const ca = await makeTestCa(`${o.tag}-ca`);
    const names = [
      ...Array.from({ length: o.hosts }, (_, i) => `${o.tag}-host-${i}`),
      `${o.tag}-dialhost`,
      `${o.tag}-client`,
    ];
    const certs = new Map<string, { certPem: string; fingerprint: string }>();
    for (const name of names) {
      const { certPem } = await issueServerCertificate(ca.rootSigner, { commonName: name, validityDays: 2 });
      certs.set(name, { certPem, fingerprint: sha1Fingerprint(certPem) });
    }
    const ready = await Promise.allSettled(
      controllers.map((c) =>
        prepare(c, { tag: o.tag, ca, certs, peers, hosts: o.hosts, concurrency: o.setupConcurrency }),
      ),
    );
    for (const r of ready) if (r.status === 'fulfilled') prepared.push(r.value);
    const unready = ready.find((r) => r.status === 'rejected');
    if (unready) throw (unready as PromiseRejectedResult).reason;
    return await run({ prepared, found, referenceSkipped });
  } finally {
    await Promise.allSettled(prepared.map((p) => p.sim.close()));
    for (const p of prepared) p.api.close();
    await Promise.allSettled(controllers.map((c) => c.stop()));
    await peers?.cleanup();
    await ownCluster?.stop();
  }
}

export function sha1Fingerprint(pem: string): string {
  return new X509Certificate(pem).fingerprint.replace(/:/g, '').toLowerCase();
}

export function bindOf(h: EdgeUser, terminatorId: string) {
  return { terminatorId, sessionToken: h.sessionToken, fingerprints: [h.fingerprint] };
}

/**
 * Everything one controller needs before it is timed: the CA, services, policies, a router enrolled
 * and the simulator connected through it, the hosting identities with their Bind sessions, the dial
 * host bound once and the client with its Dial session.
 */
export async function prepare(
  c: BenchController,
  o: {
    tag: string;
    ca: Awaited<ReturnType<typeof makeTestCa>>;
    certs: Map<string, { certPem: string; fingerprint: string }>;
    peers: ZitiPeers | undefined;
    hosts: number;
    concurrency: number;
  },
): Promise<Prepared> {
  const t = performance.now();
  const api = new EdgeApi(c.apiUrl, c.ca, { maxSockets: o.concurrency + 2 });
  try {
    const admin = await api.login(c.adminUsername, c.adminPassword);
    const create = (path: string, body: unknown) => api.create(path, admin, body);
    const { tag } = o;

    const caId = await create('/cas', {
      name: `${tag}-ca`,
      certPem: o.ca.rootPem,
      isAutoCaEnrollmentEnabled: false,
      isOttCaEnrollmentEnabled: false,
      isAuthEnabled: false,
      identityRoles: [],
    });
    const caDetail = await api.data('management', `/cas/${caId}`, { token: admin });
    await api.data('management', `/cas/${caId}/verify`, {
      method: 'POST',
      token: admin,
      rawBody: await verificationCertificate(o.ca, caDetail.verificationToken as string),
      contentType: 'text/plain',
    });

    const router = await enrollRouter(c, api, admin, {
      name: `${tag}-router`,
      roleAttributes: [`${tag}-routers`],
      ...(o.peers ? { peers: o.peers } : {}),
    });
    const sim = await SimRouter.connect({
      routerId: router.routerId,
      host: c.ctrl.host,
      port: c.ctrl.port,
      identity: router.identity,
      edgeListener: { hostname: '127.0.0.1', port: router.edgePort },
    });
    try {
      const service = (name: string) =>
        create('/services', { name, encryptionRequired: false, roleAttributes: [], configs: [] });
      const bindServiceId = await service(`${tag}-bind`);
      const dialServiceId = await service(`${tag}-dial`);
      const policy = (name: string, type: 'Bind' | 'Dial', identityRole: string, serviceId: string) =>
        create('/service-policies', {
          name,
          type,
          semantic: 'AnyOf',
          identityRoles: [identityRole],
          serviceRoles: [`@${serviceId}`],
        });
      await policy(`${tag}-hosts-bind`, 'Bind', `#${tag}-hosts`, bindServiceId);
      await policy(`${tag}-dialhost-bind`, 'Bind', `#${tag}-dialhosts`, dialServiceId);
      await policy(`${tag}-clients-dial`, 'Dial', `#${tag}-clients`, dialServiceId);
      await create('/edge-router-policies', {
        name: `${tag}-erp`,
        semantic: 'AnyOf',
        identityRoles: [`#${tag}-all`],
        edgeRouterRoles: [`@${router.routerId}`],
      });
      await create('/service-edge-router-policies', {
        name: `${tag}-serp`,
        semantic: 'AnyOf',
        serviceRoles: [`@${bindServiceId}`, `@${dialServiceId}`],
        edgeRouterRoles: [`@${router.routerId}`],
      });

      /** An identity with a password and a certificate, logged in, with an edge session of `type` on `serviceId`. */
      const user = async (name: string, role: string, type: 'Bind' | 'Dial', serviceId: string): Promise<EdgeUser> => {
        const cert = o.certs.get(name)!;
        const identityId = await create('/identities', {
          name,
          type: 'Default',
          isAdmin: false,
          roleAttributes: [`${tag}-all`, `${tag}-${role}`],
        });
        const password = randomBytes(12).toString('base64url');
        await create('/authenticators', { method: 'updb', identityId, username: name, password });
        await create('/authenticators', { method: 'cert', identityId, certPem: cert.certPem });
        const apiSessionToken = await api.login(name, password);
        // The policies reach the identity's view asynchronously here (events): asked again until it may.
        const deadline = Date.now() + 60_000;
        for (;;) {
          const res = await api.request('client', '/sessions', {
            method: 'POST',
            token: apiSessionToken,
            body: { serviceId, type },
          });
          if (res.status === 201 || res.status === 200)
            return { identityId, apiSessionToken, sessionToken: res.json.data.token, fingerprint: cert.fingerprint };
          if (Date.now() > deadline)
            throw new Error(`${c.label}: no ${type} session for ${name} within 60 s: ${res.status} ${res.text}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      const hosts: EdgeUser[] = new Array(o.hosts);
      const made = await pool(o.hosts, o.concurrency, async (i) => {
        hosts[i] = await user(`${tag}-host-${i}`, 'hosts', 'Bind', bindServiceId);
        return true;
      });
      if (made.errors > 0) throw new Error(`${c.label}: ${made.errors} hosting identities failed: ${made.firstError}`);
      const dialHost = await user(`${tag}-dialhost`, 'dialhosts', 'Bind', dialServiceId);
      const client = await user(`${tag}-client`, 'clients', 'Dial', dialServiceId);
      const bound = await sim.bind(bindOf(dialHost, randomUUID()));
      if (!bound.ok) throw new Error(`${c.label}: the dial host's bind failed: ${bound.message}`);
      return {
        controller: c,
        api,
        adminToken: admin,
        sim,
        routerId: router.routerId,
        enrolledWith: router.enrolledWith,
        bindServiceId,
        dialServiceId,
        hosts,
        client,
        setupSeconds: (performance.now() - t) / 1000,
      };
    } catch (err) {
      await sim.close();
      throw err;
    }
  } catch (err) {
    api.close();
    throw err;
  }
}

/**
 * Waits until the controller's own processes used less than `maxShare` of one core over a whole
 * `windowMs` (at most `timeoutMs`), so a phase is not timed while it still works off what came
 * before (ours: event consumers and the audit trail of the setup's thousands of writes).
 */
export async function waitForIdle(
  c: BenchController,
  o: { windowMs?: number; maxShare?: number; timeoutMs?: number } = {},
): Promise<Idle> {
  const windowMs = o.windowMs ?? 1000;
  const started = performance.now();
  const ticks = () => c.processes().reduce((sum, p) => sum + ((p.pid ? cpuTicks(p.pid) : 0) ?? 0), 0);
  for (;;) {
    const before = ticks();
    const t = performance.now();
    await new Promise((r) => setTimeout(r, windowMs));
    const share = (ticks() - before) / 100 / ((performance.now() - t) / 1000);
    const seconds = +((performance.now() - started) / 1000).toFixed(1);
    if (share < (o.maxShare ?? 0.1)) return { seconds, settled: true };
    if (seconds * 1000 > (o.timeoutMs ?? 120_000)) return { seconds, settled: false };
  }
}

/** CPU ticks of the controller's processes, this process, and (for the cluster) Postgres, Redis and NATS. */
function cpuNow(c: BenchController): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of c.processes()) {
    const ticks = p.pid ? cpuTicks(p.pid) : undefined;
    if (ticks !== undefined) out.set(p.name, ticks);
  }
  if (c.kind === 'cluster')
    for (const comm of ['postgres', 'redis-server', 'nats-server'])
      out.set(
        `${comm} (machine-wide)`,
        pidsNamed(comm).reduce((sum, pid) => sum + (cpuTicks(pid) ?? 0), 0),
      );
  const own = process.cpuUsage();
  out.set('bench process (simulated router)', Math.round((own.user + own.system) / 1e4));
  return out;
}

export async function timedPhase(
  c: BenchController,
  count: number,
  concurrency: number,
  op: (i: number) => Promise<boolean>,
): Promise<Phase & { latencies: number[] }> {
  const before = cpuNow(c);
  const r = await pool(count, concurrency, op);
  const after = cpuNow(c);
  const cpuSeconds: Record<string, number> = {};
  for (const [name, end] of after) {
    const start = before.get(name);
    // Machine-wide sums can shrink (Postgres backends that ended): never below zero.
    if (start !== undefined) cpuSeconds[name] = +(Math.max(0, end - start) / 100).toFixed(2);
  }
  const stats = latencyStats(r.latencies);
  return {
    operations: count,
    seconds: +r.seconds.toFixed(3),
    perSecond: +(count / r.seconds).toFixed(1),
    p50: stats.p50,
    p99: stats.p99,
    max: stats.max,
    errors: r.errors,
    ...(r.firstError ? { firstError: r.firstError } : {}),
    cpuSeconds,
    loadAverage1m: load1(),
    latencies: r.latencies,
  };
}

/** Every hosting identity binds once (new terminator ids), timed; then the terminators are counted and removed. */
async function bindPhase(p: Prepared, concurrency: number): Promise<RoundResult['binds'] & { latencies: number[] }> {
  const ids = p.hosts.map(() => randomUUID());
  const failures: string[] = [];
  const phase = await timedPhase(p.controller, p.hosts.length, concurrency, async (i) => {
    const res = await p.sim.bind(bindOf(p.hosts[i]!, ids[i]!));
    if (!res.ok) failures.push(res.message);
    return res.ok;
  });
  if (failures.length > 0 && !phase.firstError) phase.firstError = failures[0];
  if (p.sim.closed) throw new Error(`${p.controller.label}: the router's channel closed: ${await p.sim.whenClosed}`);
  const filter = encodeURIComponent(`service = "${p.bindServiceId}"`);
  const countPath = `/terminators?filter=${filter}&limit=1`;
  const expected = p.hosts.length - failures.length;
  const listed = await waitForCount(p, countPath, expected);
  for (let i = 0; i < ids.length; i += 250) {
    const removed = await p.sim.removeTerminators(ids.slice(i, i + 250));
    if (!removed.success) throw new Error(`${p.controller.label}: removing terminators failed: ${removed.message}`);
  }
  const after = await waitForCount(p, countPath, 0);
  return { ...phase, terminatorsListed: listed, terminatorsAfterRemoval: after };
}

/** Polls a management count until it is `expected` (for at most 30 s); the last count seen. */
export async function waitForCount(p: Prepared, path: string, expected: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const n = await p.api.count(path, p.adminToken);
    if (n === expected || Date.now() > deadline) return n;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `count` dials of the client, `concurrency` in flight; each circuit is faulted right after its answer (untimed). */
async function dialPhase(
  p: Prepared,
  count: number,
  concurrency: number,
  what: string,
): Promise<Phase & { latencies: number[] }> {
  const failures: string[] = [];
  const phase = await timedPhase(p.controller, count, concurrency, async () => {
    const res = await p.sim.dial({
      sessionToken: p.client.sessionToken,
      apiSessionToken: p.client.apiSessionToken,
      fingerprints: [p.client.fingerprint],
    });
    if (!res.ok) {
      failures.push(res.message);
      return false;
    }
    // The SDK closes: the router reports the circuit ended (off the timed path).
    setImmediate(() => p.sim.fault(res.circuitId));
    return true;
  });
  if (failures.length > 0 && !phase.firstError) phase.firstError = failures[0];
  if (p.sim.closed)
    throw new Error(
      `${p.controller.label}: the router's channel closed during the ${what} dials: ${await p.sim.whenClosed}`,
    );
  return phase;
}

/** The rounds of one controller taken together: rates over all their time, percentiles over all their samples. */
function pooled(rounds: RoundResult[]) {
  const of = (pick: (r: RoundResult) => Phase & { latencies?: number[] }) => {
    const phases = rounds.map(pick);
    const latencies = phases.flatMap((x) => x.latencies ?? []);
    const operations = phases.reduce((s, x) => s + x.operations, 0);
    const seconds = phases.reduce((s, x) => s + x.seconds, 0);
    const stats = latencyStats(latencies);
    return {
      operations,
      perSecond: +(operations / seconds).toFixed(1),
      p50: stats.p50,
      p99: stats.p99,
      max: stats.max,
      errors: phases.reduce((s, x) => s + x.errors, 0),
      perRoundPerSecond: phases.map((x) => x.perSecond),
    };
  };
  const figures = {
    binds: of((r) => r.binds),
    dials: of((r) => r.dials),
    sequentialDials: of((r) => r.sequentialDials),
  };
  // The raw samples are not kept in the record.
  for (const r of rounds)
    for (const x of [r.binds, r.dials, r.sequentialDials]) delete (x as { latencies?: number[] }).latencies;
  return figures;
}

/** Ours ÷ reference per figure (rates: above 1 is faster; latencies: above 1 is slower). */
function ratiosOf(ours: Figures, ref: Figures) {
  const r = (a: number, b: number) => (b > 0 ? +(a / b).toFixed(3) : null);
  return {
    bindsPerSecond: r(ours.binds.perSecond, ref.binds.perSecond),
    bindP50: r(ours.binds.p50, ref.binds.p50),
    bindP99: r(ours.binds.p99, ref.binds.p99),
    dialsPerSecond: r(ours.dials.perSecond, ref.dials.perSecond),
    dialP50: r(ours.dials.p50, ref.dials.p50),
    dialP99: r(ours.dials.p99, ref.dials.p99),
    sequentialDialP50: r(ours.sequentialDials.p50, ref.sequentialDials.p50),
    sequentialDialP99: r(ours.sequentialDials.p99, ref.sequentialDials.p99),
  };
}

function fmtPhase(x: { perSecond: number; p50: number; p99: number; errors: number }): string {
  return `${String(Math.round(x.perSecond)).padStart(5)}/s p50 ${x.p50} p99 ${x.p99} ms${x.errors ? ` (${x.errors} failed)` : ''}`;
}

function printTable(
  results: { controller: string; kind: ControllerKind; figures: Figures; logs: LogNotes }[],
  ratios: Record<string, ReturnType<typeof ratiosOf> | undefined>,
  o: {
    hosts: number;
    bindConcurrency: number;
    dials: number;
    dialConcurrency: number;
    sequentialDials: number;
    rounds: number;
    loadAtStart: number;
    loadAtEnd: number;
    referenceSkipped?: string | undefined;
  },
) {
  console.log(
    `\ncircuits: ${o.hosts} binds at ${o.bindConcurrency}, ${o.dials} dials at ${o.dialConcurrency} and ${o.sequentialDials} one at a time per round, ${o.rounds} round(s); load ${o.loadAtStart} → ${o.loadAtEnd}`,
  );
  console.log(
    `${'controller'.padEnd(18)} ${'binds/s'.padStart(8)} ${'p50'.padStart(7)} ${'p99'.padStart(7)} │ ${'dials/s'.padStart(8)} ${'p50'.padStart(7)} ${'p99'.padStart(7)} │ ${'1-at-a-time p50'.padStart(15)} ${'p99'.padStart(7)} │ failed`,
  );
  for (const r of results) {
    const f = r.figures;
    console.log(
      `${r.controller.padEnd(18)} ${String(Math.round(f.binds.perSecond)).padStart(8)} ${String(f.binds.p50).padStart(7)} ${String(f.binds.p99).padStart(7)} │ ${String(Math.round(f.dials.perSecond)).padStart(8)} ${String(f.dials.p50).padStart(7)} ${String(f.dials.p99).padStart(7)} │ ${String(f.sequentialDials.p50).padStart(15)} ${String(f.sequentialDials.p99).padStart(7)} │ ${f.binds.errors + f.dials.errors + f.sequentialDials.errors}`,
    );
  }
  console.log('(latencies in ms)');
  for (const [kind, x] of Object.entries(ratios)) {
    if (!x) continue;
    console.log(
      `ours (${kind}) ÷ reference: binds/s ${x.bindsPerSecond}, bind p50 ${x.bindP50}, p99 ${x.bindP99}; dials/s ${x.dialsPerSecond}, dial p50 ${x.dialP50}, p99 ${x.dialP99}; one at a time p50 ${x.sequentialDialP50}  (rates: > 1 faster; latencies: > 1 slower)`,
    );
  }
  for (const r of results) {
    const line = logNotesLine(r.controller, r.logs);
    if (line) console.log(line);
  }
  if (o.referenceSkipped) console.log(`reference row skipped: ${o.referenceSkipped}`);
}
