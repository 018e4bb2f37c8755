import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Issue 35 item 2 on the cluster: a write sent with an `Idempotency-Key` survives the replica that
 * took it hanging. With two auth replicas and one frozen (SIGSTOP: its NATS connection stays up, so
 * it keeps taking its share of first sends and answers none), the gateway sends a keyed create again
 * after `ZITI_GATEWAY_READ_RETRY_MS` (1.5 s) to every replica; the live one runs it, and the create is
 * answered 201 in about that time instead of 503 TIMEOUT after 10 s. When the frozen replica runs
 * again it finds each key taken and creates nothing: every identity exists once.
 */
const retryMs = 1_500;
let e: E2e;

beforeAll(async () => {
  e = await startE2e({ replicas: { auth: 2 } });
});
afterAll(async () => {
  await e?.stop();
});

describe('keyed identity creates while an auth replica hangs', () => {
  it('are answered 201 by the live replica within the retry budget, and each happens once', async () => {
    const hung = e.cluster.processes().find((p) => p.service === 'auth' && p.replica === 1)!;
    const tag = uniqueName('keyed');
    const create = async (i: number) => {
      const started = performance.now();
      const res = await e.call('management', {
        method: 'POST',
        path: '/identities',
        token: e.adminToken,
        headers: { 'idempotency-key': `${tag}-${i}` },
        body: { name: `${tag}-${i}`, type: 'User', isAdmin: false },
      });
      return { status: res.status, ms: performance.now() - started, text: res.text };
    };
    const countOf = async (i: number) => {
      const res = await e.call('management', {
        path: `/identities?filter=${encodeURIComponent(`name = "${tag}-${i}"`)}`,
        token: e.adminToken,
      });
      expect(res.status).toBe(200);
      return res.json.meta.pagination.totalCount as number;
    };
    await waitFor(async () => (await create(-1)).status === 201, 'auth to answer');
    process.kill(hung.pid!, 'SIGSTOP');
    let results: Awaited<ReturnType<typeof create>>[];
    try {
      results = await Promise.all(Array.from({ length: 16 }, (_, i) => create(i)));
    } finally {
      process.kill(hung.pid!, 'SIGCONT');
    }
    const slow = results.filter((r) => r.ms > retryMs * 0.8);
    const worst = Math.max(...results.map((r) => r.ms));
    console.log(
      `hung auth replica: 16 keyed creates, ${slow.length} met it, worst ${Math.round(worst)} ms, statuses ${[
        ...new Set(results.map((r) => r.status)),
      ].join(',')}`,
    );
    for (const r of results) expect(r.status, r.text.slice(0, 300)).toBe(201);
    // Some first sends reached the hung replica (else this measured nothing), each cost a repeat,
    // never the 10 s request timeout.
    expect(slow.length).toBeGreaterThan(0);
    expect(worst).toBeLessThan(retryMs * 2 + 2_000);
    // The thawed replica reads the sends it held, finds every key taken and creates nothing more:
    // once it answers again, each identity exists exactly once.
    await waitFor(
      async () => (await create(100)).status === 201 && (await create(101)).status === 201,
      'both replicas to answer',
    );
    for (let i = 0; i < 16; i++) expect(await countOf(i), `identity ${i}`).toBe(1);
  }, 90_000);
});
