import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName } from '../support/infra.ts';

/**
 * The two brakes on authentication, with low limits: the gateway's per-address rate limit on the
 * credential operations (`/authenticate`, `/authenticate/mfa`), and auth's bound on concurrent
 * password hashing (one hash at a time, nobody waiting). Both answer 429
 * SERVER_TOO_MANY_REQUESTS with the error envelope.
 */
let e: E2e;

beforeAll(async () => {
  e = await startE2e({
    env: {
      ZITI_AUTH_RATE_LIMIT: '1',
      ZITI_AUTH_RATE_BURST: '45',
      ZITI_HASH_CONCURRENCY: '1',
      ZITI_HASH_QUEUE_LIMIT: '0',
    },
  });
});
afterAll(async () => {
  await e?.stop();
});

const badLogin = () =>
  e.call('client', {
    method: 'POST',
    path: '/authenticate?method=password',
    body: { username: uniqueName('nobody'), password: 'wrong-password' },
  });

describe('authentication brakes', () => {
  it('password hashing is bounded: concurrent logins beyond the one hashing slot get 429 at once', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => badLogin()));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    const busy = results.filter((r) => r.status === 429);
    expect(busy.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s === 401).length).toBeGreaterThan(0);
    for (const r of busy) {
      expect(r.json.error).toMatchObject({ code: 'SERVER_TOO_MANY_REQUESTS', cause: { code: 'RATE_LIMITED' } });
      expect(r.json.error.cause.message).toContain('password checks');
      expect(r.json.meta).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
    }
  });

  it('an address that keeps trying is refused by the gateway with 429, Retry-After and the envelope; other operations go on', async () => {
    let refused;
    for (let i = 0; i < 30 && !refused; i++) {
      const res = await badLogin();
      if (res.status === 429 && String(res.json.error.cause?.message).includes('from this address')) refused = res;
      else expect([401, 429]).toContain(res.status);
    }
    expect(refused, 'the limiter never refused').toBeDefined();
    expect(refused!.json.error).toMatchObject({
      code: 'SERVER_TOO_MANY_REQUESTS',
      message: expect.stringContaining('Too many requests'),
    });
    expect(Number(refused!.headers['retry-after'])).toBeGreaterThan(0);
    // The right password does not get through either: the limit is before any check.
    const admin = await e.call('management', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: e.cluster.adminUsername, password: e.cluster.adminPassword },
    });
    expect(admin.status).toBe(429);
    // So is the MFA code, the other credential operation.
    const mfa = await e.call('client', {
      method: 'POST',
      path: '/authenticate/mfa',
      token: e.adminToken,
      body: { code: '123456' },
    });
    expect(mfa.status).toBe(429);
    expect(mfa.json.error.code).toBe('SERVER_TOO_MANY_REQUESTS');
    // Everything else is untouched.
    expect((await e.call('client', { path: '/version' })).status).toBe(200);
    expect((await e.call('management', { path: '/identities', token: e.adminToken })).status).toBe(200);
  });
});
