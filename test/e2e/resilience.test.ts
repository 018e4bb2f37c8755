import { readFileSync, readdirSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Issue 12, robustness and secrecy on the cluster (each service its own process):
 * - a dependency that is down is a 503 with the envelope, never a 500 (items 11, 16);
 * - terminating every service's Postgres backends under load kills no process, fails only what
 *   was in flight (503) and the cluster serves again within seconds (item 14);
 * - SIGTERM of a gateway under keep-alive load: it exits promptly, no request is reset, no
 *   acknowledged write is lost (item 15);
 * - no log line of the whole run, at any level, carries a secret the run created (item 1).
 */
let e: E2e;
const secrets = new Set<string>();

beforeAll(async () => {
  e = await startE2e({ env: { LOG_LEVEL: 'trace' } });
  secrets.add(e.cluster.adminPassword);
  secrets.add(e.adminToken);
});
afterAll(async () => {
  await e?.stop();
});

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: e.adminToken, ...init });

async function newUser() {
  const user = await e.createUser();
  secrets.add(user.password);
  secrets.add(user.token);
  return user;
}

function expectUnavailable(res: { status: number; json: { error?: { code?: string } } }) {
  expect(res.status).toBe(503);
  expect(['SERVICE_UNAVAILABLE', 'TIMEOUT']).toContain(res.json?.error?.code);
}

describe('a dependency that is down is a 503, never a 500', () => {
  it('pki-enrollment down: creating an identity with an enrollment and its detail; others are still served', async () => {
    const user = await newUser();
    const withEnrollment = await mgmt('/identities', {
      method: 'POST',
      body: { name: uniqueName('enr'), type: 'User', isAdmin: false, enrollment: { ott: true } },
    });
    expect(withEnrollment.status).toBe(201);
    const enrolled = await mgmt(`/identities/${withEnrollment.json.data.id}`);
    for (const value of [enrolled.json.data.enrollment?.ott?.jwt, enrolled.json.data.enrollment?.ott?.token])
      if (typeof value === 'string') secrets.add(value);

    await e.cluster.stopService('pki-enrollment');
    const name = uniqueName('enr-down');
    try {
      expectUnavailable(
        await mgmt('/identities', {
          method: 'POST',
          body: { name, type: 'User', isAdmin: false, enrollment: { ott: true } },
        }),
      );
      // Only an identity with an outstanding enrollment needs pki-enrollment (docs/adr/0012).
      expectUnavailable(await mgmt(`/identities/${withEnrollment.json.data.id}`));
      expect((await mgmt(`/identities/${user.id}`)).status).toBe(200);
      expect((await e.call('client', { path: '/current-identity', token: user.token })).status).toBe(200);
      // Whatever does not need pki-enrollment still works.
      expect((await mgmt('/services?limit=1')).status).toBe(200);
    } finally {
      await e.cluster.startService('pki-enrollment');
    }
    // The refused creation left nothing behind.
    const left = await mgmt(`/identities?filter=${encodeURIComponent(`name = "${name}"`)}`);
    expect(left.status).toBe(200);
    expect(left.json.data).toEqual([]);
    expect((await mgmt(`/identities/${user.id}`)).status).toBe(200);
    expect((await e.call('client', { path: '/current-identity', token: user.token })).status).toBe(200);
  });
});

describe('Postgres backends terminated under load (pg_terminate_backend)', () => {
  it('kills no service, fails only with 503 and serves again within seconds', async () => {
    const admin = new pg.Client({
      connectionString: e.cluster.env.AUTH_DATABASE_URL!.replace(/\/[^/]+$/, '/postgres'),
    });
    await admin.connect();
    const databases = Object.values(e.cluster.databases).map((url) => new URL(url).pathname.slice(1));
    const pids = e.cluster.processes().map((p) => p.pid!);
    const statuses = new Map<number, number>();
    const bad: string[] = [];
    const user = await newUser();
    const round = async (): Promise<number[]> => {
      const name = uniqueName('load');
      const results = await Promise.all([
        mgmt('/identities', { method: 'POST', body: { name, type: 'User', isAdmin: false }, skipValidation: true }),
        mgmt('/identities?limit=5', { skipValidation: true }),
        mgmt('/services', { method: 'POST', body: { name, encryptionRequired: true }, skipValidation: true }),
        mgmt('/services?limit=5', { skipValidation: true }),
        mgmt('/service-policies?limit=5', { skipValidation: true }),
        mgmt('/cas?limit=5', { skipValidation: true }),
        e.call('client', { path: '/current-identity', token: user.token, skipValidation: true }),
        e.call('client', {
          method: 'POST',
          path: '/authenticate?method=password',
          body: { username: user.username, password: user.password },
          skipValidation: true,
        }),
      ]);
      for (const r of results) {
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status >= 500 && !(r.status === 503 && ['SERVICE_UNAVAILABLE', 'TIMEOUT'].includes(r.json?.error?.code)))
          bad.push(`${r.status} ${r.text.slice(0, 200)}`);
        if (r.json?.data?.token) secrets.add(r.json.data.token);
      }
      return results.map((r) => r.status);
    };
    let loading = true;
    // Three clients, each sending a round of eight requests (every service) at a time.
    const loaders = Array.from({ length: 3 }, async () => {
      while (loading) await round();
    });
    try {
      for (let i = 0; i < 6; i++) {
        await waitFor(() => statuses.size > 0, 'load to flow');
        await admin.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where datname = any($1::text[]) and pid <> pg_backend_pid()',
          [databases],
        );
        const before = [...statuses.values()].reduce((a, b) => a + b, 0);
        await waitFor(() => [...statuses.values()].reduce((a, b) => a + b, 0) > before + 8, 'requests after the cut');
      }
    } finally {
      loading = false;
      await Promise.all(loaders);
      await admin.end();
    }
    expect(bad).toEqual([]);
    // No process died.
    for (const pid of pids) expect(() => process.kill(pid, 0)).not.toThrow();
    expect(e.cluster.processes().map((p) => p.pid)).toEqual(pids);
    // Every operation works again.
    await waitFor(async () => (await round()).every((s) => s < 300), 'every service to answer again', 20_000, 200);
  });
});

describe('SIGTERM of a gateway under keep-alive traffic', () => {
  it('exits within seconds, resets no request and loses no acknowledged write', async () => {
    await e.cluster.startService('gateway');
    const port = e.cluster.gatewayPorts()[1]!;
    const agent = new Agent({ keepAlive: true, maxSockets: 6, ca: e.caPems.join('') });
    const send = (method: string, path: string, body?: unknown) =>
      new Promise<{ status: number; json: { data?: { id?: string } } }>((resolve, reject) => {
        const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
        const r = httpsRequest(
          {
            host: '127.0.0.1',
            port,
            method,
            path: `/edge/management/v1${path}`,
            servername: 'localhost',
            agent,
            headers: {
              'zt-session': e.adminToken,
              ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : {} });
            });
            res.on('error', reject);
          },
        );
        r.on('error', reject);
        r.end(payload);
      });
    const written = new Map<string, string>();
    const failures: string[] = [];
    let answered = 0;
    let terminated = false;
    const loop = async (i: number) => {
      for (let n = 0; ; n++) {
        const name = uniqueName(`drain${i}`);
        try {
          const res =
            n % 2 === 0
              ? await send('POST', '/services', { name, encryptionRequired: true })
              : await send('GET', '/services?limit=3');
          answered++;
          if (res.status === 201) written.set(name, res.json.data!.id!);
          else if (res.status !== 200) failures.push(`${res.status} ${JSON.stringify(res.json).slice(0, 200)}`);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
          // After the stop a new connection is refused: that request never reached a gateway.
          if (terminated && code === 'ECONNREFUSED') return;
          failures.push(`${terminated ? 'after' : 'before'} SIGTERM: ${code}`);
          return;
        }
      }
    };
    const loops = Array.from({ length: 6 }, (_, i) => loop(i));
    await waitFor(() => answered >= 30, 'keep-alive traffic to flow', 30_000);
    terminated = true;
    const started = Date.now();
    await e.cluster.killReplica('gateway', 1, 'SIGTERM');
    const exitMs = Date.now() - started;
    await Promise.all(loops);
    agent.destroy();
    expect(failures).toEqual([]);
    // Before the drain it served for ~17 s and was forced out at 20 s; 10 s leaves room for a loaded CI machine.
    expect(exitMs).toBeLessThan(10_000);
    expect(readFileSync(join(e.cluster.logDir, 'gateway-1.log'), 'utf8')).toContain('"msg":"stopped"');
    // Every write the stopped gateway acknowledged is there.
    expect(written.size).toBeGreaterThan(0);
    for (const [name, id] of written) {
      const res = await mgmt(`/services/${id}`);
      expect(res.status).toBe(200);
      expect(res.json.data.name).toBe(name);
    }
  });
});

describe('secrets in the log', () => {
  it("the issue's repro: a failing authenticator update logs neither the password nor its hash", async () => {
    const user = await newUser();
    const password = `pw-${uniqueName('new')}`;
    secrets.add(password);
    const res = await e.call('client', {
      method: 'PATCH',
      path: `/current-identity/authenticators/${user.authenticatorId}`,
      token: user.token,
      body: { currentPassword: user.password, password, tags: { x: 'a\u0000b' } },
      skipValidation: true,
    });
    expect(res.status).not.toBe(200);
  });

  it('no log line of the run carries a password, token, hash, salt, key or sealed secret', async () => {
    // What the databases keep secret: hashes, salts, token hashes, sealed keys and tokens.
    for (const url of [e.cluster.databases.auth!, e.cluster.databases['pki-enrollment']!]) {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const { rows: columns } = await client.query<{ table_name: string; column_name: string }>(
          `select table_name, column_name from information_schema.columns
            where table_schema = 'public' and data_type = 'text'
              and column_name ~ '(hash|salt|token|secret|key|encrypted|password)'`,
        );
        for (const c of columns) {
          const { rows } = await client.query(`select "${c.column_name}" as v from "${c.table_name}"`);
          for (const r of rows) if (typeof r.v === 'string' && r.v.length >= 12) secrets.add(r.v);
        }
      } finally {
        await client.end();
      }
    }
    expect(secrets.size).toBeGreaterThan(10);
    const logs = readdirSync(e.cluster.logDir).filter((f) => f.endsWith('.log'));
    expect(logs.length).toBeGreaterThanOrEqual(5);
    const leaks: string[] = [];
    for (const file of logs) {
      const text = readFileSync(join(e.cluster.logDir, file), 'utf8');
      for (const secret of secrets) {
        // Long values (PEM keys, sealed blobs) are looked for by a distinctive slice too.
        const needles = secret.length > 64 ? [secret.slice(20, 60)] : [secret];
        for (const needle of needles) if (text.includes(needle)) leaks.push(`${file}: ${needle.slice(0, 12)}…`);
      }
    }
    expect(leaks).toEqual([]);
  });
});
