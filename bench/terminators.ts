/**
 * `npm run bench -- terminators` (issue 34 §4): terminators at scale, the load of openziti/ziti#3318
 * ("the first 10k terminators get created almost at once, the next 10k take an hour"): `BENCH_TERMINATORS`
 * (40,000) terminators bound through a router by `BENCH_TERMINATORS_HOSTS` (200) hosting identities
 * (each binding many, as an SDK with many listeners does) at 16 in flight, timed per
 * `BENCH_TERMINATORS_CHUNK` (10,000), while a client dials the whole time (`BENCH_TERMINATORS_DIALERS`,
 * 2 in flight, `BENCH_TERMINATORS_DIAL_RATE` 20/s at most, the same load on each controller; each circuit
 * torn down after its answer): the creation rate of each chunk (goal: the
 * last no slower than 1.2 × the first) and the dials' p50/p99 during the storm — for `npm start`, the
 * cluster and the reference controller 1.1.9 in the same run, the same client code (bench/circuits.ts
 * `prepare`: a simulated 1.1.9 router, bench/support/sim-router.ts, on a real router identity; a CA of
 * the run; per host a password and a certificate authenticator, a login and a Bind session).
 * Each controller is timed alone, after it is idle; the terminators are counted through
 * `GET /terminators` at the end (a count that differs fails the scenario, after the figures are
 * recorded). Where `ziti` v1.1.9 is not found the reference row is skipped with one line saying why.
 * Loopback only. Results go to bench/results/<date>-terminators.json; no floors yet.
 */
import { randomUUID } from 'node:crypto';
import {
  type Phase,
  type Prepared,
  bindOf,
  timedPhase,
  waitForCount,
  waitForIdle,
  withPreparedControllers,
} from './circuits.ts';
import { type ScenarioOptions, gitState, latencyStats, load1, machine, recordResult, rssMiB } from './common.ts';
import { logNotesLine } from './support/controllers.ts';

export interface TerminatorsOptions extends ScenarioOptions {
  terminators?: number;
  chunk?: number;
  hosts?: number;
  bindConcurrency?: number;
  dialers?: number;
  /** Dials per second at most, all dialers together (default 20): the same dial load on every controller. */
  dialRate?: number;
  setupConcurrency?: number;
  reference?: boolean;
}

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);

interface Storm {
  chunks: (Omit<Phase, 'cpuSeconds'> & { cpuSeconds: Record<string, number> })[];
  /** Seconds of the last chunk ÷ seconds of the first (goal ≤ 1.2). */
  lastOverFirst: number;
  dials: {
    operations: number;
    perSecond: number;
    p50: number;
    p99: number;
    max: number;
    errors: number;
    firstError?: string;
  };
  terminatorsListed: number;
}

export async function benchTerminators(options: TerminatorsOptions = {}) {
  const o = {
    terminators: options.terminators ?? env('BENCH_TERMINATORS', 40_000),
    chunk: options.chunk ?? env('BENCH_TERMINATORS_CHUNK', 10_000),
    hosts: options.hosts ?? env('BENCH_TERMINATORS_HOSTS', 200),
    bindConcurrency: options.bindConcurrency ?? 16,
    dialers: options.dialers ?? env('BENCH_TERMINATORS_DIALERS', 2),
    dialRate: options.dialRate ?? env('BENCH_TERMINATORS_DIAL_RATE', 20),
    setupConcurrency: options.setupConcurrency ?? 8,
  };
  if (o.chunk <= 0 || o.terminators % o.chunk !== 0)
    throw new Error('BENCH_TERMINATORS must be a multiple of the chunk');
  const tag = `bench-t-${Date.now().toString(36)}`;
  const loadAtStart = load1();
  return withPreparedControllers(
    { ...options, tag, hosts: o.hosts, setupConcurrency: o.setupConcurrency, clusterName: 't' },
    async ({ prepared, found, referenceSkipped }) => {
      const results = [];
      for (const p of prepared) {
        const idle = await waitForIdle(p.controller);
        const storm = await bindStorm(p, o);
        console.log(
          `terminators: ${p.controller.label.padEnd(16)} ${storm.chunks.map((c) => `${Math.round(c.perSecond)}/s`).join(' → ')} (last ÷ first ${storm.lastOverFirst}); dials during it ${Math.round(storm.dials.perSecond)}/s p50 ${storm.dials.p50} p99 ${storm.dials.p99} ms; ${storm.terminatorsListed} listed (idle after ${idle.seconds} s)`,
        );
        results.push({
          controller: p.controller.label,
          kind: p.controller.kind,
          setupSeconds: +p.setupSeconds.toFixed(1),
          storm,
          rssMiB: p.controller.processes().map((x) => ({ process: x.name, rssMiB: rssMiB(x.pid) })),
          logs: p.controller.logNotes(),
        });
      }
      const reference = results.find((r) => r.kind === 'reference');
      const ratios = Object.fromEntries(
        results
          .filter((r) => r.kind !== 'reference')
          .map((r) => [
            r.kind,
            reference
              ? {
                  chunks: r.storm.chunks.map(
                    (c, i) => +(c.perSecond / reference.storm.chunks[i]!.perSecond).toFixed(3),
                  ),
                  dialP99: +(r.storm.dials.p99 / Math.max(1, reference.storm.dials.p99)).toFixed(3),
                }
              : undefined,
          ]),
      );
      for (const [kind, x] of Object.entries(ratios))
        if (x)
          console.log(
            `ours (${kind}) ÷ reference: creation rate per chunk ${x.chunks.join(', ')}; dial p99 ${x.dialP99}`,
          );
      for (const r of results) {
        const line = logNotesLine(r.controller, r.logs);
        if (line) console.log(line);
      }
      if (referenceSkipped) console.log(`reference row skipped: ${referenceSkipped}`);
      const summary = {
        date: new Date().toISOString(),
        scenario: 'terminators',
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
      await recordResult('terminators', summary, options.record ?? true);
      const expected = o.terminators;
      const problems = results.flatMap((r) => [
        ...r.storm.chunks
          .filter((c) => c.errors > 0)
          .map((c) => `${r.controller}: ${c.errors} binds failed (${c.firstError})`),
        ...(r.storm.dials.errors > 0
          ? [`${r.controller}: ${r.storm.dials.errors} dials failed (${r.storm.dials.firstError})`]
          : []),
        ...(r.storm.terminatorsListed !== expected
          ? [`${r.controller}: GET /terminators listed ${r.storm.terminatorsListed} of ${expected}`]
          : []),
      ]);
      if (problems.length > 0) throw new Error(`terminators failed:\n  ${problems.join('\n  ')}`);
      return summary;
    },
  );
}

/** The terminators bound chunk by chunk, each timed, while the client dials without pause. */
async function bindStorm(
  p: Prepared,
  o: { terminators: number; chunk: number; hosts: number; bindConcurrency: number; dialers: number; dialRate: number },
): Promise<Storm> {
  let storming = true;
  const dialLatencies: number[] = [];
  const dialFailures: string[] = [];
  const dialStart = performance.now();
  // Paced: dial n starts no earlier than n / dialRate seconds in, whichever dialer takes it.
  let started = 0;
  const dialer = async () => {
    while (storming) {
      const due = dialStart + (started++ * 1000) / o.dialRate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (!storming) break;
      const t = performance.now();
      const res = await p.sim.dial({
        sessionToken: p.client.sessionToken,
        apiSessionToken: p.client.apiSessionToken,
        fingerprints: [p.client.fingerprint],
      });
      dialLatencies.push(Math.round(performance.now() - t));
      if (!res.ok) dialFailures.push(res.message);
      else setImmediate(() => p.sim.fault(res.circuitId));
    }
  };
  const dialers = Array.from({ length: o.dialers }, () => dialer());
  const chunks: Storm['chunks'] = [];
  try {
    for (let start = 0; start < o.terminators; start += o.chunk) {
      const failures: string[] = [];
      const phase = await timedPhase(p.controller, o.chunk, o.bindConcurrency, async (i) => {
        const res = await p.sim.bind(bindOf(p.hosts[(start + i) % p.hosts.length]!, randomUUID()));
        if (!res.ok) failures.push(res.message);
        return res.ok;
      });
      if (failures.length > 0 && !phase.firstError) phase.firstError = failures[0];
      const { latencies: _latencies, ...figures } = phase;
      chunks.push(figures);
      if (p.sim.closed)
        throw new Error(`${p.controller.label}: the router's channel closed: ${await p.sim.whenClosed}`);
    }
  } finally {
    storming = false;
    await Promise.all(dialers);
  }
  const dialSeconds = (performance.now() - dialStart) / 1000;
  const stats = latencyStats(dialLatencies);
  const listed = await waitForCount(
    p,
    `/terminators?filter=${encodeURIComponent(`service = "${p.bindServiceId}"`)}&limit=1`,
    o.terminators,
  );
  return {
    chunks,
    lastOverFirst: +(chunks.at(-1)!.seconds / chunks[0]!.seconds).toFixed(3),
    dials: {
      operations: dialLatencies.length,
      perSecond: +(dialLatencies.length / dialSeconds).toFixed(1),
      p50: stats.p50,
      p99: stats.p99,
      max: stats.max,
      errors: dialFailures.length,
      ...(dialFailures[0] ? { firstError: dialFailures[0] } : {}),
    },
    terminatorsListed: listed,
  };
}
