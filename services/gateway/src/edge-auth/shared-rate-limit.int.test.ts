import { createServer as createNetServer } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, metricsRegistry } from '@ziti/platform';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { TcpProxy } from '../../../../packages/platform/test/support/tcp-proxy.ts';
import { infra, uniqueName, waitFor } from '../../../../test/support/infra.ts';
import { SharedRateLimiter, type SharedRateLimiterOptions } from './shared-rate-limit.adapter.ts';

/**
 * Issue 25 item 3: the authentication rate limit holds across gateway replicas (one bucket per
 * client address in Redis, taken atomically), and each replica counts alone while Redis is down,
 * saying so once. Real Redis; the outage is this test's own connection cut through a proxy, or a
 * closed port, never the machine's Redis.
 */
const silent = createLogger('test', 'silent');
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

function capturedLogger() {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return {
    logger: createLogger('gateway', 'info', sink),
    messages: () =>
      text
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { msg: string }).msg),
  };
}

function limiter(o: Partial<SharedRateLimiterOptions> & Pick<SharedRateLimiterOptions, 'keyPrefix' | 'config'>) {
  const l = new SharedRateLimiter({ url: infra.redisUrl, logger: silent, ...o });
  cleanups.push(() => l.close());
  return l;
}

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const found = (await metricsRegistry.getSingleMetric(name)?.get())?.values.find((v) =>
    Object.entries(labels).every(([k, x]) => v.labels[k] === x),
  );
  return found?.value ?? 0;
}

async function deadPort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

describe('the shared authentication rate limit (real Redis)', () => {
  it('allows exactly the burst in total to concurrent attempts through two replicas', async () => {
    const keyPrefix = `${uniqueName('rl')}:`;
    // 1 per minute: no refill worth a token while the test runs.
    const config = { perMinute: 1, burst: 25 };
    const a = limiter({ keyPrefix, config });
    const b = limiter({ keyPrefix, config });
    const attempts = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? a : b).take('198.51.100.7'));
    const decisions = await Promise.all(attempts);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
    const refused = decisions.filter((d) => !d.allowed);
    expect(refused).toHaveLength(175);
    // One token a minute: the next is about a minute away.
    for (const d of refused) expect(d.retryAfterSeconds).toBeGreaterThanOrEqual(55);
    // Another address has its own bucket.
    expect((await b.take('198.51.100.8')).allowed).toBe(true);
  });

  it('refills at the rate, by Redis clock, and keeps each bucket only until it would be full again', async () => {
    const keyPrefix = `${uniqueName('rl')}:`;
    // 1200 per minute: a token every 50 ms; a burst of 2 is full again after 100 ms.
    const l = limiter({ keyPrefix, config: { perMinute: 1_200, burst: 2 } });
    expect((await l.take('203.0.113.1')).allowed).toBe(true);
    expect((await l.take('203.0.113.1')).allowed).toBe(true);
    const refused = await l.take('203.0.113.1');
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: 1 });
    await waitFor(async () => (await l.take('203.0.113.1')).allowed, 'a token to come back', 2_000, 20);
    const redis = new Redis(infra.redisUrl);
    cleanups.push(async () => redis.quit());
    const key = `${keyPrefix}rl:auth:203.0.113.1`;
    const ttl = await redis.pttl(key);
    // Expires once full again (≤ 100 ms of refill) plus a second's margin: memory stays bounded.
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(1_100);
    await waitFor(async () => (await redis.exists(key)) === 0, 'the bucket key to expire', 3_000);
  });

  it('turns off at 0 per minute, without asking Redis', async () => {
    const l = limiter({
      url: `redis://127.0.0.1:${await deadPort()}`,
      keyPrefix: 'off:',
      config: { perMinute: 0, burst: 1 },
    });
    for (let i = 0; i < 50; i++) expect((await l.take('x')).allowed).toBe(true);
  });

  it('falls back to its own bucket while Redis is unreachable, logged once', async () => {
    const { logger, messages } = capturedLogger();
    const l = limiter({
      url: `redis://127.0.0.1:${await deadPort()}`,
      keyPrefix: `${uniqueName('rl')}:`,
      config: { perMinute: 1, burst: 3 },
      logger,
    });
    const before = await metric('ziti_auth_rate_limit_local_decisions_total');
    const started = performance.now();
    const decisions = [];
    for (let i = 0; i < 6; i++) decisions.push((await l.take('192.0.2.5')).allowed);
    expect(decisions).toEqual([true, true, true, false, false, false]);
    // No attempt waited for Redis.
    expect(performance.now() - started).toBeLessThan(200);
    expect(await metric('ziti_auth_rate_limit_local_decisions_total')).toBe(before + 6);
    expect(await metric('ziti_auth_rate_limit_shared')).toBe(0);
    expect(
      messages().filter((m) => m.startsWith('redis is not available for the authentication rate limit')),
    ).toHaveLength(1);
  });

  it('goes back to the shared bucket when Redis returns, logged once each way', async () => {
    const proxy = await TcpProxy.to(infra.redisUrl);
    cleanups.push(() => proxy.close());
    const { logger, messages } = capturedLogger();
    const keyPrefix = `${uniqueName('rl')}:`;
    const config = { perMinute: 1, burst: 4 };
    const viaProxy = limiter({ url: proxy.url('redis:'), keyPrefix, config, logger, retryAfterMs: 100 });
    const direct = limiter({ keyPrefix, config });
    await waitFor(async () => (await viaProxy.take('198.51.100.50')).allowed, 'the first shared decision');
    expect(await metric('ziti_auth_rate_limit_shared')).toBe(1);

    await proxy.cut();
    // Cut off: its own bucket (full: the shared one had 3 tokens left), whatever the shared one holds.
    for (let i = 0; i < 4; i++) await direct.take('198.51.100.50');
    expect((await direct.take('198.51.100.50')).allowed).toBe(false);
    const alone = [];
    for (let i = 0; i < 5; i++) alone.push((await viaProxy.take('198.51.100.50')).allowed);
    expect(alone).toEqual([true, true, true, true, false]);
    expect(await metric('ziti_auth_rate_limit_shared')).toBe(0);

    await proxy.restore();
    // Back: the shared bucket, which the other replica emptied.
    await waitFor(
      async () => {
        await viaProxy.take('198.51.100.50');
        return (await metric('ziti_auth_rate_limit_shared')) === 1;
      },
      'the limiter to share again',
      10_000,
      120,
    );
    expect((await viaProxy.take('198.51.100.50')).allowed).toBe(false);
    const said = messages();
    expect(said.filter((m) => m.startsWith('redis is not available for the authentication rate limit'))).toHaveLength(
      1,
    );
    expect(said.filter((m) => m.startsWith('redis is available again'))).toHaveLength(1);
  }, 30_000);
});
