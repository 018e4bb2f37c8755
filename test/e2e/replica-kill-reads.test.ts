import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { waitFor } from '../support/infra.ts';

/**
 * Issue 25 item 4 on the local cluster: an inventory replica killed with SIGKILL while reads are
 * in flight costs those reads about the gateway's read budget (`ZITI_GATEWAY_READ_RETRY_MS`, 1.5 s
 * by default), not the bus's 10 s timeout: the gateway sends an unanswered read again and the live
 * replica answers it. To be sure reads are in flight on the doomed replica when it dies, it is
 * first frozen (SIGSTOP: its NATS connection stays up, so it keeps taking its share of reads and
 * answers none), then killed.
 */
let e: E2e;
const readBudgetMs = 1_500;

beforeAll(async () => {
  e = await startE2e({ replicas: { inventory: 2 } });
});
afterAll(async () => {
  await e?.stop();
});

describe('reads while an inventory replica hangs with its connection up', () => {
  it('are answered by the live replica within the read budget, however many the hung one takes', async () => {
    const hung = e.cluster.processes().find((p) => p.service === 'inventory' && p.replica === 1)!;
    const read = () =>
      e.call('management', { path: '/config-types?limit=5', token: e.adminToken, skipValidation: true });
    await waitFor(async () => (await read()).status === 200, 'inventory to answer');
    const results: { status: number; ms: number }[] = [];
    let stop = false;
    const reader = async () => {
      while (!stop) {
        const started = performance.now();
        const res = await read();
        results.push({ status: res.status, ms: performance.now() - started });
      }
    };
    // Frozen (SIGSTOP): its NATS connection stays up, so NATS keeps giving it its share of first
    // sends for as long as it hangs. Every repeat also reaches the live replica.
    process.kill(hung.pid!, 'SIGSTOP');
    const readers = Array.from({ length: 6 }, reader);
    try {
      await waitFor(() => results.length >= 60, 'sixty reads while it hangs', 30_000);
    } finally {
      stop = true;
      await Promise.allSettled(readers);
      process.kill(hung.pid!, 'SIGCONT');
    }
    const slow = results.filter((r) => r.ms > readBudgetMs * 0.8);
    const worst = Math.max(...results.map((r) => r.ms));
    console.log(
      `hung replica: ${results.length} reads, ${slow.length} met it, worst ${Math.round(worst)} ms, statuses ${[
        ...new Set(results.map((r) => r.status)),
      ].join(',')}`,
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    // About half the first sends reached the hung replica (else this measured nothing)...
    expect(slow.length).toBeGreaterThan(5);
    // ...and each cost one repeat, never the 10 s timeout (had the repeats gone to the queue group,
    // one read in four would have met the hung replica twice, one in eight three times).
    expect(worst).toBeLessThan(readBudgetMs * 2 + 1_000);
    // It answers again once it runs.
    await waitFor(async () => (await read()).status === 200, 'both replicas to answer');
  }, 90_000);
});

describe('reads while an inventory replica is killed', () => {
  it('complete within the read budget, not the 10 s bus timeout', async () => {
    const inventory = e.cluster.processes().filter((p) => p.service === 'inventory');
    expect(inventory).toHaveLength(2);
    const doomed = inventory.find((p) => p.replica === 1)!;
    // Not validated against the spec: the test process's own CPU must not look like a stuck read.
    const read = () =>
      e.call('management', { path: '/config-types?limit=5', token: e.adminToken, skipValidation: true });
    // Both replicas serve.
    await waitFor(async () => (await read()).status === 200, 'inventory to answer');

    const results: { status: number; ms: number; startedAt: number; error?: string }[] = [];
    /** When each read now in flight started. */
    const inFlight = new Set<number>();
    let stop = false;
    const t0 = performance.now();
    const reader = async () => {
      while (!stop) {
        const started = performance.now();
        inFlight.add(started);
        const res = await read();
        inFlight.delete(started);
        results.push({
          status: res.status,
          ms: performance.now() - started,
          startedAt: started - t0,
          ...(res.status === 200 ? {} : { error: res.text }),
        });
      }
    };
    const readers = Array.from({ length: 8 }, reader);
    let frozenAt = 0;
    let killedAt = 0;
    try {
      await waitFor(() => results.length >= 40, 'reads to flow');
      // Freeze it: the reads it takes from now on are in flight on it. Then kill it.
      process.kill(doomed.pid!, 'SIGSTOP');
      frozenAt = performance.now() - t0;
      // Reads are answered in milliseconds otherwise: three waiting 300 ms are in flight on the frozen replica.
      await waitFor(
        () => [...inFlight].filter((started) => performance.now() - started > 300).length >= 3,
        'reads to be caught by the frozen replica',
        10_000,
        5,
      );
      await e.cluster.killReplica('inventory', 1, 'SIGKILL');
      killedAt = performance.now() - t0;
      // Reads go on on the survivor for a while.
      await waitFor(
        () => results.filter((r) => r.startedAt > killedAt + 500).length >= 40,
        'reads after the kill',
        15_000,
      );
    } finally {
      // A failed wait must not leave readers calling a cluster that is being stopped.
      stop = true;
      // Frozen and never killed (a wait failed): let it run again so the cluster stops it.
      if (frozenAt > 0 && killedAt === 0) process.kill(doomed.pid!, 'SIGCONT');
      await Promise.allSettled(readers);
    }

    const around = results.filter((r) => r.startedAt >= frozenAt - 100);
    const slow = around.filter((r) => r.ms > readBudgetMs * 0.8);
    const worst = Math.max(...around.map((r) => r.ms));
    // For the report: how long the reads that met the dead replica took.
    const statuses = [...new Set(results.map((r) => r.status))].join(',');
    const took = slow.map((r) => Math.round(r.ms)).join(', ');
    console.log(
      `replica kill: ${results.length} reads, ${around.length} from the freeze on ` +
        `(frozen ${Math.round(killedAt - frozenAt)} ms before the kill); ${slow.length} met the dead replica, ` +
        `taking ${took} ms; worst ${Math.round(worst)} ms; statuses ${statuses}`,
    );
    for (const r of results.filter((x) => x.status !== 200))
      console.log(
        `not answered: ${Math.round(r.startedAt - frozenAt)} ms after the freeze, ${Math.round(r.ms)} ms, ${r.error}`,
      );
    // Every read was answered, and none waited for the bus timeout.
    expect(results.every((r) => r.status === 200)).toBe(true);
    // Some reads did meet the frozen, then dead, replica (else this measured nothing)...
    expect(slow.length).toBeGreaterThan(0);
    // ...and cost about the read budget: a repeat to a live replica, well under the 10 s timeout.
    expect(worst).toBeLessThan(readBudgetMs * 2 + 1_000);
  }, 90_000);
});
