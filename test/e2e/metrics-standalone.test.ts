import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { uniqueName, waitFor } from '../support/infra.ts';
import { startStandaloneProcess } from '../support/standalone-process.ts';

/**
 * `npm start` with HEALTH_PORT: one process, one registry, every service's series apart by their
 * labels (outbox per service, consumers per durable), served at `/metrics` on the health port.
 */

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
    const controller = await startStandaloneProcess(dataDir);
    const { http, healthPort, admin } = controller;
    try {
      expect(controller.output()).toContain(`Metrics: http://127.0.0.1:${healthPort}/metrics`);
      const token = admin['zt-session']!;
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

      expect(await controller.stop()).toBe(0);
    } finally {
      if (controller.child.exitCode === null) controller.child.kill('SIGKILL');
    }
  }, 180_000);
});
