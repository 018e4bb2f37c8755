import { type Server, createServer, request } from 'node:http';
import { ApiError, type OperationRequest, queueGroup, subjects } from '@ziti/contracts';
import { ConfigError, InProcessBus, MemoryApiSessionStore, createLogger } from '@ziti/platform';
import { afterAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../src/app.ts';
import { readGatewayConfig, readGatewayProcessConfig } from '../src/config.ts';

/**
 * Issue 25 item 3 at the gateway's edge: the client address through trusted proxies (what the
 * rate limit keys on and what the owners receive as `remoteAddress`, which the audit trail and the
 * API session record), CORS with and without an allow-list, and their settings checked up front.
 */
const servers: Server[] = [];
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A gateway app on plain HTTP with `env` as its settings; the owners' authenticate records what it got. */
async function gateway(env: Record<string, string>) {
  const bus = new InProcessBus();
  const seen: OperationRequest[] = [];
  bus.serve(subjects.operation('auth', 'client', 'authenticate'), queueGroup('auth'), async (payload) => {
    seen.push(payload as OperationRequest);
    throw new ApiError('INVALID_AUTH');
  });
  const app = createGatewayApp({
    config: readGatewayConfig(env),
    bus,
    sessions: new MemoryApiSessionStore(),
    logger: createLogger('gateway', 'silent'),
  });
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const send = (
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: unknown,
  ): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; raw: string[] }> =>
    new Promise((resolve, reject) => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const r = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path,
          headers: { ...headers, ...(text ? { 'content-type': 'application/json' } : {}) },
          agent: false,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, raw: res.rawHeaders }));
        },
      );
      r.on('error', reject);
      r.end(text);
    });
  const login = (headers: Record<string, string> = {}) =>
    send('POST', '/edge/client/v1/authenticate?method=password', headers, {
      username: 'someone',
      password: 'not-the-password',
    });
  return { send, login, seen };
}

/** The response's header lines without those that differ per request (date, request id, instance). */
function stableHeaders(raw: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (['date', 'x-request-id', 'ziti-instance-id', 'connection', 'keep-alive'].includes(name)) continue;
    out.push(`${name}: ${raw[i + 1]}`);
  }
  return out;
}

describe('the client address', () => {
  it('is the socket peer by default: X-Forwarded-For is not believed', async () => {
    const g = await gateway({});
    await g.login({ 'x-forwarded-for': '198.51.100.1' });
    expect(g.seen.at(-1)?.remoteAddress).toBe('127.0.0.1');
  });

  it('behind trusted proxies, is the forwarded one: the owners get it and the limit counts it', async () => {
    const g = await gateway({
      ZITI_TRUSTED_PROXIES: '127.0.0.1/32, ::1',
      ZITI_AUTH_RATE_LIMIT: '1',
      ZITI_AUTH_RATE_BURST: '2',
    });
    const a = { 'x-forwarded-for': '6.6.6.6, 198.51.100.10' };
    expect((await g.login(a)).status).toBe(401);
    expect(g.seen.at(-1)?.remoteAddress).toBe('198.51.100.10');
    expect((await g.login(a)).status).toBe(401);
    const refused = await g.login(a);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    // Another client behind the same proxy has its own bucket; so has the proxy itself.
    expect((await g.login({ 'x-forwarded-for': '198.51.100.11' })).status).toBe(401);
    expect((await g.login()).status).toBe(401);
    expect(g.seen.map((r) => r.remoteAddress)).toEqual([
      '198.51.100.10',
      '198.51.100.10',
      '198.51.100.11',
      '127.0.0.1',
    ]);
  });

  it('reads RFC 7239 Forwarded when told to, and then only it', async () => {
    const g = await gateway({ ZITI_TRUSTED_PROXIES: '127.0.0.0/8', ZITI_TRUSTED_PROXY_HEADER: 'Forwarded' });
    await g.login({ forwarded: 'for="[2001:db8::7]:1234";proto=https', 'x-forwarded-for': '198.51.100.1' });
    expect(g.seen.at(-1)?.remoteAddress).toBe('2001:db8::7');
    await g.login({ 'x-forwarded-for': '198.51.100.1' });
    expect(g.seen.at(-1)?.remoteAddress).toBe('127.0.0.1');
  });
});

describe('CORS', () => {
  it('unset, answers as the reference: any origin with credentials, preflight 200 (unchanged)', async () => {
    const g = await gateway({});
    const preflight = await g.send('OPTIONS', '/edge/management/v1/identities', {
      origin: 'https://zac.example.com:8443',
      'access-control-request-method': 'POST',
    });
    expect(preflight.status).toBe(200);
    expect(stableHeaders(preflight.raw)).toEqual([
      'access-control-allow-origin: https://zac.example.com:8443',
      'access-control-allow-credentials: true',
      'vary: Origin',
      'strict-transport-security: max-age=31536000',
      'x-content-type-options: nosniff',
      'cache-control: no-store',
      'access-control-allow-headers: content-type, accept, authorization, zt-session',
      'access-control-allow-methods: GET, HEAD, POST, PUT, PATCH, DELETE',
      'content-length: 0',
    ]);
    const noOrigin = await g.send('OPTIONS', '/edge/client/v1/version');
    expect(noOrigin.headers['access-control-allow-origin']).toBe('*');
    const get = await g.send('GET', '/edge/client/v1/version', { origin: 'http://anything.test' });
    expect(get.status).toBe(200);
    expect(get.headers['access-control-allow-origin']).toBe('http://anything.test');
    expect(get.headers['access-control-allow-credentials']).toBe('true');
    expect(get.headers.vary).toBe('Origin');
  });

  it('with a list, gives the CORS headers to listed origins only; others’ preflights get no allow headers', async () => {
    const g = await gateway({ ZITI_CORS_ORIGINS: 'https://ZAC.example.com:8443/, http://localhost:8080' });
    const listed = await g.send('OPTIONS', '/edge/management/v1/identities', {
      origin: 'https://zac.example.com:8443',
      'access-control-request-method': 'POST',
    });
    expect(listed.status).toBe(200);
    expect(listed.headers).toMatchObject({
      'access-control-allow-origin': 'https://zac.example.com:8443',
      'access-control-allow-credentials': 'true',
      'access-control-allow-headers': 'content-type, accept, authorization, zt-session',
      'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
      vary: 'Origin',
    });
    const get = await g.send('GET', '/edge/client/v1/version', { origin: 'http://localhost:8080' });
    expect(get.headers['access-control-allow-origin']).toBe('http://localhost:8080');

    for (const origin of ['https://evil.example.com', 'https://zac.example.com', 'null']) {
      const other = await g.send('OPTIONS', '/edge/management/v1/identities', {
        origin,
        'access-control-request-method': 'POST',
      });
      expect(other.status).toBe(200);
      for (const name of Object.keys(other.headers)) expect(name).not.toMatch(/^access-control-/);
      expect(other.headers.vary).toBe('Origin');
      const call = await g.send('GET', '/edge/client/v1/version', { origin });
      expect(call.status).toBe(200);
      for (const name of Object.keys(call.headers)) expect(name).not.toMatch(/^access-control-/);
    }
    // No Origin (not a browser's cross-origin call): answered, without CORS headers.
    const plain = await g.send('GET', '/edge/client/v1/version');
    expect(plain.status).toBe(200);
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('the settings, checked up front', () => {
  it('are read and normalised', () => {
    const c = readGatewayConfig({
      ZITI_TRUSTED_PROXIES: '10.0.0.0/8,::1',
      ZITI_TRUSTED_PROXY_HEADER: 'X-Forwarded-For',
      ZITI_CORS_ORIGINS: 'https://console.example.com/',
      ZITI_GATEWAY_READ_RETRY_MS: '0',
    });
    expect(c).toMatchObject({
      trustedProxies: ['10.0.0.0/8', '::1'],
      forwardedHeader: 'x-forwarded-for',
      corsOrigins: ['https://console.example.com'],
      readRetryMs: 0,
    });
    expect(readGatewayConfig({})).toMatchObject({ trustedProxies: [], readRetryMs: 1_500 });
    expect(readGatewayConfig({}).corsOrigins).toBeUndefined();
  });

  it('report every problem in one message, without repeating the values', () => {
    let error: unknown;
    try {
      readGatewayProcessConfig({
        NATS_URL: 'nats://127.0.0.1:4222',
        REDIS_URL: 'redis://127.0.0.1:6379',
        ZITI_TRUSTED_PROXIES: '10.0.0.0/8, lb.internal',
        ZITI_TRUSTED_PROXY_HEADER: 'x-real-ip',
        ZITI_CORS_ORIGINS: 'https://ok.example.com, https://user:secret@console.example.com, *, https://a.example/app',
        ZITI_GATEWAY_READ_RETRY_MS: '-1',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'ZITI_TRUSTED_PROXIES: item 2 of 2 is not an IP address or CIDR range (e.g. 10.0.0.0/8, 192.168.1.7, fd00::/8)',
      'ZITI_TRUSTED_PROXY_HEADER must be one of x-forwarded-for, forwarded',
      'ZITI_CORS_ORIGINS: items 2, 3, 4 of 4 are not an origin (scheme://host[:port], http or https, no path, e.g. https://console.example.com)',
      'ZITI_GATEWAY_READ_RETRY_MS must be an integer in 0..10000',
    ]);
    expect((error as Error).message).not.toContain('secret');
    expect(() => readGatewayConfig({ ZITI_CORS_ORIGINS: ' , ' })).toThrow(/names no origin/);
  });
});
