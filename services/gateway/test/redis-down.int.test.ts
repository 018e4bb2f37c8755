import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { Writable } from 'node:stream';
import { InProcessBus, RedisApiSessionStore, createLogger } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../src/app.ts';
import { readGatewayConfig } from '../src/config.ts';

/**
 * Issue 12 item 16: with Redis down the gateway answers 503 SERVICE_UNAVAILABLE with the error
 * envelope (not a 500 from `MaxRetriesPerRequestError`), logs the outage once and raises no
 * unhandled ioredis error event.
 */
let text = '';
const logger = createLogger(
  'gateway',
  'warn',
  new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  }),
);
let store: RedisApiSessionStore;
let server: ReturnType<typeof createServer>;
let port = 0;

beforeAll(async () => {
  // A loopback port nothing listens on: Redis is down.
  const deadPort = await new Promise<number>((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
  store = new RedisApiSessionStore(`redis://127.0.0.1:${deadPort}`, 'down:', { logger });
  const app = createGatewayApp({ config: readGatewayConfig({}), bus: new InProcessBus(), sessions: store, logger });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  await store?.close();
});

describe('Redis down at the gateway', () => {
  it('a request with an API session is a 503 with the envelope, the outage logged once', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/edge/management/v1/identities`, {
        headers: { 'zt-session': '6f1c3a52-3d0e-4c59-9d51-0b4f7c1a2e33' },
      });
      expect(res.status).toBe(503);
      const body = (await res.json()) as { error: { code: string }; meta: unknown };
      expect(body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(body.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
    }
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('redis is not available');
  });
});
