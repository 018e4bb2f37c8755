import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, apiCaller, startE2e } from '../support/e2e.ts';
import { createHttpClient } from '../support/http.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Issue 25 item 3 on the local cluster: two gateway replicas share one authentication rate limit
 * (in Redis), keyed on the client's address as the trusted proxies forwarded it. Logins sent
 * alternately to both replicas are refused after the burst in total, not after the burst at each;
 * the address that was counted is the one the audit trail and the API session record.
 */
let e: E2e;
let replicas: ReturnType<typeof apiCaller>[];
const burst = 6;

beforeAll(async () => {
  e = await startE2e({
    replicas: { gateway: 2 },
    env: {
      // One token a minute: nothing refills while the test runs.
      ZITI_AUTH_RATE_LIMIT: '1',
      ZITI_AUTH_RATE_BURST: String(burst),
      // The test client is the "proxy": loopback is trusted, so X-Forwarded-For names the client.
      ZITI_TRUSTED_PROXIES: '127.0.0.1, ::1',
    },
  });
  const ports = e.cluster.gatewayPorts();
  expect(ports).toHaveLength(2);
  replicas = ports.map((port) =>
    apiCaller(createHttpClient(`https://127.0.0.1:${port}`, e.caPems.join('')), e.validator),
  );
});
afterAll(async () => {
  await e?.stop();
});

const badLogin = (replica: number, client: string) =>
  replicas[replica]!('client', {
    method: 'POST',
    path: '/authenticate?method=password',
    headers: { 'x-forwarded-for': `192.0.2.99, ${client}` },
    body: { username: uniqueName('nobody'), password: 'wrong-password' },
  });

/** One series of a process's `/metrics` (summed over its label sets that match `labels`). */
function metricOf(healthPort: number, name: string, labels = ''): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: healthPort, path: '/metrics' }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => {
        let sum = 0;
        for (const line of text.split('\n'))
          if (line.startsWith(name) && (line[name.length] === ' ' || line.slice(name.length).startsWith(`{${labels}`)))
            sum += Number(line.slice(line.lastIndexOf(' ') + 1));
        resolve(sum);
      });
    })
      .on('error', reject)
      .end();
  });
}

describe('the authentication rate limit across two gateway replicas', () => {
  it('refuses after the burst in total, logins alternating between the replicas', async () => {
    const client = '203.0.113.10';
    const statuses: number[] = [];
    for (let i = 0; i < burst * 2; i++) {
      const res = await badLogin(i % 2, client);
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.json.error).toMatchObject({ code: 'SERVER_TOO_MANY_REQUESTS', cause: { code: 'RATE_LIMITED' } });
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      }
    }
    // Per replica, each would have allowed `burst` (all twelve 401): shared, six in all.
    expect(statuses).toEqual([...Array<number>(burst).fill(401), ...Array<number>(burst).fill(429)]);

    // Another client behind the same proxy has its own bucket, on either replica.
    expect((await badLogin(0, '203.0.113.11')).status).toBe(401);
    expect((await badLogin(1, '203.0.113.11')).status).toBe(401);

    // Both replicas count in Redis, and say so.
    const gateways = e.cluster.processes().filter((p) => p.service === 'gateway');
    expect(gateways).toHaveLength(2);
    let refused = 0;
    for (const g of gateways) {
      expect(await metricOf(g.healthPort, 'ziti_auth_rate_limit_shared')).toBe(1);
      refused += await metricOf(g.healthPort, 'ziti_auth_rate_limit_refused_total', 'scope="shared"');
    }
    expect(refused).toBe(burst);
  });

  it('records the forwarded address: in the audit trail and on the API session', async () => {
    const client = '198.51.100.77';
    const failed = await badLogin(1, client);
    expect(failed.status).toBe(401);
    const requestId = String(failed.headers['x-request-id']);
    const login = await replicas[0]!('management', {
      method: 'POST',
      path: '/authenticate?method=password',
      headers: { 'x-forwarded-for': client },
      body: { username: e.cluster.adminUsername, password: e.cluster.adminPassword },
    });
    expect(login.status).toBe(200);
    const token = login.json.data.token as string;
    const session = await replicas[1]!('management', { path: '/current-api-session', token });
    expect(session.status).toBe(200);
    expect(session.json.data.ipAddress).toBe(client);

    const record = await waitFor(async () => {
      const res = await e.call('management', {
        path: `/extensions/audit-records?filter=${encodeURIComponent(`requestId = "${requestId}"`)}`,
        token: e.adminToken,
      });
      return (res.json.data as { remoteAddress?: string; category: string }[])[0];
    }, 'the audit record of the failed login');
    expect(record).toMatchObject({ category: 'authentication', remoteAddress: client });
  });
});
