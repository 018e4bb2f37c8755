import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalCluster } from '../../deploy/local-cluster.ts';
import { benchBulk } from '../../bench/bulk.ts';
import { benchCircuits } from '../../bench/circuits.ts';
import { benchTerminators } from '../../bench/terminators.ts';
import { benchCluster } from '../../bench/common.ts';
import { benchLists } from '../../bench/lists.ts';
import { benchLogin, defaultHashNice } from '../../bench/login.ts';
import { readAuthConfig } from '../../services/auth/src/config.ts';
import { benchRead } from '../../bench/read.ts';
import { benchSessions } from '../../bench/sessions.ts';
import { benchStartup } from '../../bench/startup.ts';
import { benchWhatIf } from '../../bench/what-if.ts';
import { findZiti } from '../support/ziti-peers.ts';

/**
 * The benchmark scenarios (`npm run bench -- read|login|bulk|lists|startup|sessions|what-if|circuits|terminators`) at a
 * tiny size on one shared cluster, so they cannot rot: each must run to the end and produce its
 * figures with no errors. Shape only: timings are never asserted (this is not a timed test); what-if's
 * check of its answers against applying them is (a mismatch fails the scenario).
 */
let cluster: LocalCluster;

beforeAll(async () => {
  cluster = await benchCluster('smoke', { ZITI_AUTH_RATE_LIMIT: '0' });
});
afterAll(async () => {
  await cluster?.stop();
});

const num = () => expect.any(Number);
const finite = (x: unknown) => expect(Number.isFinite(x)).toBe(true);

function expectRss(rss: { process: string; rssMiB: number | undefined }[], except: string[] = []) {
  for (const s of ['pki-enrollment', 'auth', 'policy', 'inventory', 'gateway'].filter((x) => !except.includes(x)))
    expect(rss.find((p) => p.process.startsWith(`${s}#`))?.rssMiB).toEqual(num());
}

describe('benchmark scenarios at tiny size', () => {
  it('read: current-identity and current-api-session beside the baselines, ratio and RSS', async () => {
    const r = await benchRead({ cluster, record: false, seconds: 1, warmupSeconds: 0, connections: 4 });
    expect(r.results).toHaveLength(5);
    // /current-identity after the first read is answered from the gateway's answer cache.
    expect(r.answerCacheLookups.hit).toBeGreaterThan(0);
    for (const x of r.results) {
      expect(x.requestsPerSecond).toBeGreaterThan(0);
      finite(x.latencyP50);
      finite(x.latencyP99);
      expect(x.errors + x.non2xx).toBe(0);
    }
    finite(r.ratios.currentIdentityVsExpress);
    expectRss(r.rssMiB);
    expect(r.rssMiB.find((p) => p.process === 'baseline-express')?.rssMiB).toEqual(num());
  });

  it('sessions: new dial sessions and the idempotent repeat beside the insert floor, CPU per process', async () => {
    const r = await benchSessions({ cluster, record: false, identities: 3, services: 4, connections: 3 });
    expect(r.results).toHaveLength(3);
    for (const x of r.results) {
      expect(x.operations).toBe(12);
      expect(x.perSecond).toBeGreaterThan(0);
      finite(x.p50);
      finite(x.p99);
      expect(x.errors).toBe(0);
    }
    finite(r.ratios.newSessionsVsInsert);
    finite(r.ratios.repeatVsInsert);
    expect(Object.keys(r.cpuPerScenario)).toHaveLength(2);
  });

  it('login: logins beside the argon2 floor, reads idle and during the storm', async () => {
    const r = await benchLogin({ cluster, record: false, seconds: 1, warmupSeconds: 0, connections: 4, readRate: 10 });
    // The nice value a run records when none is set is the one auth defaults to.
    expect(defaultHashNice()).toBe(readAuthConfig({ ZITI_SECRET_KEY: 'k'.repeat(43) }).hashNice);
    expect(r.floor.verifiesPerSecond).toBeGreaterThan(0);
    expect(r.floor.errors).toBe(0);
    for (const x of [r.logins, r.idleReads, r.stormReads]) {
      expect(x.requestsPerSecond).toBeGreaterThan(0);
      finite(x.latencyP99);
      expect(x.errors + x.non2xx).toBe(0);
    }
    finite(r.ratios.loginsVsFloor);
    finite(r.ratios.stormReadP99VsIdle);
    expectRss(r.rssMiB);
  });

  it('bulk: creates into an existing network (SQL-seeded), chunks and floor', async () => {
    const r = await benchBulk({ cluster, record: false, identities: 40, existing: 40, chunk: 10, preseed: 'sql' });
    expect(r.api.errors).toBe(0);
    expect(r.api.chunkSeconds).toHaveLength(4);
    finite(r.api.seconds);
    finite(r.api.p99);
    finite(r.ratios.lastVsFirstChunk);
    expect(r.floor.errors).toBe(0);
    expect(r.floor.perSecond).toBeGreaterThan(0);
    expect(r.identitiesAfter).toBeGreaterThanOrEqual(80);
    expectRss(r.rssMiB);
  });

  it('lists: every filter beside its SQL, same counts', async () => {
    const r = await benchLists({
      cluster,
      record: false,
      identities: 300,
      apiIdentities: 20,
      rounds: 3,
      catchUpSeconds: 10,
    });
    expect(r.results).toHaveLength(6);
    for (const x of r.results) {
      expect(x.api.errors).toBe(0);
      expect(x.floor.errors).toBe(0);
      finite(x.api.p50);
      finite(x.api.p99);
      finite(x.floor.p99);
      expect(x.countsAgree).toBe(true);
      expect(x.authPagePlan.length).toBeGreaterThan(0);
    }
    expect(r.identities).toBeGreaterThanOrEqual(300);
    // policy is stopped during the measurement when it has not applied the seeded events in time.
    expectRss(r.rssMiB, r.policyStoppedDuringMeasurement ? ['policy'] : []);
  });

  it('startup: npm start to the first answer, a cluster service to ready', async () => {
    const r = await benchStartup({ cluster, record: false, standaloneStarts: 1, services: ['inventory'] });
    expect(r.floor.ms).toBeGreaterThan(0);
    expect(r.standalone).toHaveLength(1);
    expect(r.standalone[0]!.msToFirstVersion).toBeGreaterThan(0);
    expect(r.standalone[0]!.controllerRssMiB).toEqual(num());
    expect(r.serviceStarts).toEqual([{ service: 'inventory', msSpawnToReady: num(), rssMiBAtReady: num() }]);
    expectRss(r.rssMiB);
  }, 120_000);

  it('what-if: timed proposals, then every kind answered, applied for real and equal to the difference', async () => {
    // 200 identities, 20 services, 4 edge routers, 40 policies; one round and one check of each kind.
    const r = await benchWhatIf({ cluster, record: false, scale: 0.02, rounds: 17, checks: 17 });
    expect(r.errors).toBe(0);
    expect(r.whatIf.count).toBe(17);
    finite(r.whatIf.p99);
    expect(r.checks).toMatchObject({ proposals: 17, matched: 17, mismatched: 0, errors: 0, refusedTooWide: 0 });
    expect(Object.keys(r.checks.byKind)).toHaveLength(17);
    // The proposals moved something (not only no-ops).
    expect(r.checks.withDifference).toBeGreaterThan(5);
    expect(r.checks.appliedEntries).toBeGreaterThan(0);
    expectRss(r.rssMiB);
  }, 180_000);

  it('circuits: binds and dials through a simulated router under npm start and on the cluster, beside the reference when found', async () => {
    // Where the binary is absent the reference row is skipped at once (no build attempt here).
    process.env.ZITI_PEERS_NO_INSTALL ??= '1';
    const withReference = 'path' in findZiti();
    const r = await benchCircuits({
      cluster,
      record: false,
      hosts: 4,
      dials: 12,
      sequentialDials: 3,
      rounds: 2,
      warmupDials: 4,
      idleWindowMs: 250,
    });
    expect(r.results.map((x) => x.kind).sort()).toEqual(
      withReference ? ['cluster', 'embedded', 'reference'] : ['cluster', 'embedded'],
    );
    if (!withReference) expect(r.reference).toEqual({ skipped: expect.any(String) });
    for (const x of r.results) {
      expect(x.rounds).toHaveLength(2);
      for (const round of x.rounds) {
        expect(round.binds).toMatchObject({
          operations: 4,
          errors: 0,
          terminatorsListed: 4,
          terminatorsAfterRemoval: 0,
        });
        expect(round.dials).toMatchObject({ operations: 12, errors: 0 });
        expect(round.sequentialDials).toMatchObject({ operations: 3, errors: 0 });
      }
      for (const f of [x.figures.binds, x.figures.dials, x.figures.sequentialDials]) {
        expect(f.perSecond).toBeGreaterThan(0);
        finite(f.p50);
        finite(f.p99);
      }
      // Every dial's circuit was routed through the simulated router.
      expect(x.router.routes).toBeGreaterThanOrEqual(2 * (12 + 3) + 4);
      expect(x.router.closed).toBe(false);
    }
    for (const kind of ['embedded', 'cluster'] as const) {
      const ratio = r.ratiosOursOverReference[kind];
      if (withReference) finite(ratio?.dialsPerSecond);
      else expect(ratio).toBeUndefined();
    }
  }, 150_000);

  it('terminators: chunks of binds while a client dials, under npm start and on the cluster, beside the reference when found', async () => {
    process.env.ZITI_PEERS_NO_INSTALL ??= '1';
    const withReference = 'path' in findZiti();
    const r = await benchTerminators({ cluster, record: false, terminators: 40, chunk: 10, hosts: 4, dialers: 1 });
    expect(r.results.map((x) => x.kind).sort()).toEqual(
      withReference ? ['cluster', 'embedded', 'reference'] : ['cluster', 'embedded'],
    );
    for (const x of r.results) {
      expect(x.storm.chunks.map((c) => [c.operations, c.errors])).toEqual([
        [10, 0],
        [10, 0],
        [10, 0],
        [10, 0],
      ]);
      expect(x.storm.terminatorsListed).toBe(40);
      expect(x.storm.dials.operations).toBeGreaterThan(0);
      expect(x.storm.dials.errors).toBe(0);
      finite(x.storm.lastOverFirst);
      finite(x.storm.dials.p99);
    }
    if (withReference) expect(r.ratiosOursOverReference.cluster?.chunks).toHaveLength(4);
  }, 150_000);
});
