import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../support/http.ts';
import { uniqueName, waitFor } from '../support/infra.ts';
import { certificatesFromPkcs7Base64 } from '../support/pkcs7.ts';
import { freePort } from '../../deploy/ports.ts';

/**
 * `npm start` with HEALTH_PORT: one process, one registry, every service's series apart by their
 * labels (outbox per service, consumers per durable), served at `/metrics` on the health port.
 */

const root = new URL('../../', import.meta.url).pathname;

/** `name{labels} value` lines whose name is `name` and whose labels include `labels`, summed. */
function total(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const has: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) has[l[1]!] = l[2]!;
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) sum = (sum ?? 0) + Number(m[3]);
  }
  return sum;
}

describe('npm start serves /metrics on HEALTH_PORT', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ziti-metrics-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('with the series of every service in the one process, apart by their labels', async () => {
    const [port, healthPort] = [await freePort(), await freePort()];
    const password = uniqueName('pw');
    const child = spawn(process.execPath, ['--import', 'tsx', 'apps/standalone/src/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        ZITI_DATA_DIR: dataDir,
        ZITI_PORT: String(port),
        ZITI_ADVERTISED_ADDRESS: `localhost:${port}`,
        ZITI_ADMIN_PASSWORD: password,
        HEALTH_PORT: String(healthPort),
        LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    try {
      await waitFor(() => output.includes('is up at'), 'the controller to start', 90_000);
      expect(output).toContain(`Metrics: http://127.0.0.1:${healthPort}/metrics`);

      const insecure = createHttpClient(`https://127.0.0.1:${port}`, undefined);
      const ca = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text);
      const http = createHttpClient(`https://127.0.0.1:${port}`, ca.join(''));
      const login = await http({
        method: 'POST',
        path: '/edge/management/v1/authenticate?method=password',
        body: { username: 'admin', password },
      });
      expect(login.status).toBe(200);
      const token = login.json.data.token as string;
      const created = await http({
        method: 'POST',
        path: '/edge/management/v1/identities',
        headers: { 'zt-session': token },
        body: { name: uniqueName('metrics'), type: 'User', isAdmin: false },
      });
      expect(created.status).toBe(201);

      const scrape = async () => {
        const res = await fetch(`http://127.0.0.1:${healthPort}/metrics`);
        expect(res.status).toBe(200);
        return res.text();
      };
      // The identity's event leaves auth's outbox and reaches the other services' consumers.
      const text = await waitFor(async () => {
        const t = await scrape();
        return (total(t, 'ziti_outbox_published_events_total', { service: 'auth' }) ?? 0) >= 1 &&
          total(t, 'ziti_event_consumer_parked_events', { consumer: 'policy-from-auth' }) !== undefined
          ? t
          : undefined;
      }, 'the identity event to be published and the consumers to tick');

      expect(total(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      for (const service of ['auth', 'pki-enrollment', 'policy', 'inventory']) {
        expect(total(text, 'ziti_outbox_pending_events', { service }), service).toBeGreaterThanOrEqual(0);
        expect(text, service).toMatch(new RegExp(`ziti_event_consumer_pending_events\\{consumer="${service}-from-`));
      }
      // The in-process bus delivers at publish: nothing waits on a stream.
      expect(total(text, 'ziti_event_consumer_pending_events')).toBe(0);
      expect(total(text, 'ziti_api_sessions')).toBeGreaterThanOrEqual(1);
      expect(total(text, 'ziti_password_hash_wait_seconds_count')).toBeGreaterThanOrEqual(1);
      expect(
        total(text, 'ziti_bus_request_duration_seconds_count', { target: 'auth', kind: 'operation' }),
      ).toBeGreaterThanOrEqual(2);
      // PGlite has no connection pool to report.
      expect(text).not.toContain('ziti_db_pool_connections{');

      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  }, 180_000);
});
