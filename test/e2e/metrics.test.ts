import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * Prometheus metrics on every process of the cluster: `GET /metrics` on each health port, the named
 * series present where they belong, and moving under traffic (logins, management writes and reads).
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Scrape {
  types: Map<string, string>;
  samples: Sample[];
}

function parseExposition(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The sum of the samples named `name` whose labels include `labels` (undefined: none). */
function total(s: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = s.samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return found.length === 0 ? undefined : found.reduce((a, x) => a + x.value, 0);
}

async function scrape(port: number): Promise<Scrape & { contentType: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  return { ...parseExposition(await res.text()), contentType: res.headers.get('content-type') ?? '' };
}

/** The pipeline calls request-metrics.transport.ts once it is wired in (services/gateway/src/pipeline/pipeline.transport.ts). */
const gatewayRequestsWired = readFileSync(
  new URL('../../services/gateway/src/pipeline/pipeline.transport.ts', import.meta.url),
  'utf8',
).includes('recordGatewayRequest(');

const databaseServices = ['auth', 'pki-enrollment', 'policy', 'inventory'] as const;

let e: E2e;
const port = (service: string) => {
  const p = e.cluster.processes().find((x) => x.service === service);
  if (!p) throw new Error(`no ${service} process`);
  return p.healthPort;
};
const scrapeOf = (service: string) => scrape(port(service));

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

describe('GET /metrics on every process', () => {
  it('answers the text exposition with the process metrics on each health port', async () => {
    const processes = e.cluster.processes();
    expect(processes.map((p) => p.service).sort()).toEqual(
      ['audit', 'auth', 'fabric', 'gateway', 'inventory', 'pki-enrollment', 'policy'].sort(),
    );
    for (const p of processes) {
      const s = await scrape(p.healthPort);
      expect(s.contentType, p.service).toMatch(/^text\/plain; version=0\.0\.4/);
      for (const name of [
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
        'nodejs_heap_size_used_bytes',
      ])
        expect(s.types.has(name), `${p.service} ${name}`).toBe(true);
      expect(total(s, 'nodejs_eventloop_lag_seconds'), p.service).toBeGreaterThanOrEqual(0);
    }
  });

  it('has the series of what each process runs', async () => {
    // Consumers report on their periodic tick (every 5 s); the first one runs at start.
    for (const service of databaseServices) {
      const s = await waitFor(async () => {
        const got = await scrapeOf(service);
        return total(got, 'ziti_event_consumer_pending_events') !== undefined ? got : undefined;
      }, `${service}'s consumer metrics`);
      expect(total(s, 'ziti_db_pool_connections', { service }), service).toBeGreaterThanOrEqual(1);
      expect(total(s, 'ziti_db_pool_max_connections', { service }), service).toBe(10);
      expect(total(s, 'ziti_db_pool_idle_connections', { service }), service).toBeGreaterThanOrEqual(0);
      expect(total(s, 'ziti_db_pool_waiting_requests', { service }), service).toBe(0);
      expect(total(s, 'ziti_outbox_pending_events', { service }), service).toBeGreaterThanOrEqual(0);
      expect(total(s, 'ziti_outbox_oldest_pending_age_seconds', { service }), service).toBeGreaterThanOrEqual(0);
      expect(s.types.get('ziti_outbox_published_events_total'), service).toBe('counter');
      const consumers = s.samples.filter((x) => x.name === 'ziti_event_consumer_pending_events');
      expect(consumers.length, service).toBeGreaterThan(0);
      for (const c of consumers) {
        expect(c.labels.consumer, service).toBe(`${service}-from-${c.labels.source}`);
        expect(c.value).toBeGreaterThanOrEqual(0);
        expect(total(s, 'ziti_event_consumer_parked_events', c.labels), c.labels.consumer).toBe(0);
      }
    }
    const auth = await scrapeOf('auth');
    for (const name of ['ziti_password_hash_running', 'ziti_password_hash_queued', 'ziti_password_hash_rejected_total'])
      expect(total(auth, name), name).toBe(0);
    expect(auth.types.get('ziti_password_hash_wait_seconds')).toBe('histogram');
    // The fixture's admin login is live.
    expect(total(auth, 'ziti_api_sessions')).toBeGreaterThanOrEqual(1);

    const gateway = await scrapeOf('gateway');
    expect(gateway.types.get('ziti_bus_request_duration_seconds')).toBe('histogram');
    expect(gateway.types.get('ziti_bus_request_failures_total')).toBe('counter');
    // Only what a process runs: the gateway has no database, outbox, consumers or password hashes.
    for (const name of ['ziti_db_pool_connections', 'ziti_outbox_pending_events', 'ziti_password_hash_queued'])
      expect(gateway.types.has(name), name).toBe(false);
    expect(auth.types.has('ziti_http_requests_total')).toBe(false);
  });
});

describe('metrics under traffic', () => {
  it('move with logins and management writes and reads', async () => {
    const before = {
      gateway: await scrapeOf('gateway'),
      auth: await scrapeOf('auth'),
    };
    const sessionsBefore = total(before.auth, 'ziti_api_sessions') ?? 0;

    const tokens = [];
    for (let i = 0; i < 3; i++) tokens.push(await e.login(e.cluster.adminUsername, e.cluster.adminPassword));
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await e.createIdentity({ name: uniqueName('metrics') }));
    const list = await e.call('management', { path: '/identities?limit=5', token: tokens[0] });
    expect(list.status).toBe(200);
    for (const id of ids)
      expect((await e.call('management', { path: `/identities/${id}`, token: tokens[1] })).status).toBe(200);
    const missing = await e.call('management', { path: '/identities/no-such-id', token: tokens[2] });
    expect(missing.status).toBe(404);
    const unmatched = await e.http({ path: '/edge/management/v1/no-such-path' });
    expect(unmatched.status).toBe(404);

    // auth: every login hashed a password, each created a live session, the writes left its outbox.
    const auth = await waitFor(async () => {
      const s = await scrapeOf('auth');
      const published = total(s, 'ziti_outbox_published_events_total', { service: 'auth' }) ?? 0;
      const publishedBefore = total(before.auth, 'ziti_outbox_published_events_total', { service: 'auth' }) ?? 0;
      return published >= publishedBefore + 3 ? s : undefined;
    }, "auth's outbox relay publishing the three identities");
    const hashed = (s: Scrape) => total(s, 'ziti_password_hash_wait_seconds_count') ?? 0;
    expect(hashed(auth)).toBeGreaterThanOrEqual(hashed(before.auth) + 3);
    expect(total(auth, 'ziti_api_sessions')).toBeGreaterThanOrEqual(sessionsBefore + 3);
    expect(total(auth, 'ziti_outbox_pending_events', { service: 'auth' })).toBeGreaterThanOrEqual(0);

    // The consumers of auth's events took them: no lag left, nothing parked.
    for (const service of ['policy', 'pki-enrollment', 'inventory']) {
      await waitFor(async () => {
        const s = await scrapeOf(service);
        const lag = total(s, 'ziti_event_consumer_pending_events', { consumer: `${service}-from-auth` });
        return lag === 0;
      }, `${service}-from-auth to catch up`);
      expect(
        total(await scrapeOf(service), 'ziti_event_consumer_parked_events', { consumer: `${service}-from-auth` }),
      ).toBe(0);
    }

    // gateway: one bus request per operation dispatched to auth, each timed.
    const gateway = await scrapeOf('gateway');
    const toAuth = (s: Scrape) =>
      total(s, 'ziti_bus_request_duration_seconds_count', { target: 'auth', kind: 'operation' }) ?? 0;
    expect(toAuth(gateway)).toBeGreaterThanOrEqual(toAuth(before.gateway) + 3 + 3 + 1 + 3 + 1);
    expect(total(gateway, 'ziti_bus_request_duration_seconds_sum', { target: 'auth' })).toBeGreaterThan(0);

    if (gatewayRequestsWired) {
      const requests = (s: Scrape, labels: Record<string, string>) => total(s, 'ziti_http_requests_total', labels) ?? 0;
      const created = { operation: 'management.createIdentity', status: '201' };
      expect(requests(gateway, created)).toBeGreaterThanOrEqual(requests(before.gateway, created) + 3);
      const notFound = { operation: 'management.detailIdentity', status: '404' };
      expect(requests(gateway, notFound)).toBeGreaterThanOrEqual(requests(before.gateway, notFound) + 1);
      const unmatchedLabels = { operation: 'unmatched', status: '404' };
      expect(requests(gateway, unmatchedLabels)).toBeGreaterThanOrEqual(requests(before.gateway, unmatchedLabels) + 1);
      const timed = (s: Scrape) =>
        total(s, 'ziti_http_request_duration_seconds_count', { operation: 'management.listIdentities' }) ?? 0;
      expect(timed(gateway)).toBeGreaterThanOrEqual(timed(before.gateway) + 1);
    }
  });

  it('counts bus failures by target and reason when a service is down', async () => {
    const failures = (s: Scrape) =>
      total(s, 'ziti_bus_request_failures_total', { target: 'inventory', reason: 'no_responders' }) ?? 0;
    const before = failures(await scrapeOf('gateway'));
    await e.cluster.stopService('inventory');
    // Config types belong to inventory.
    const res = await e.call('management', { path: '/config-types', token: e.adminToken, skipValidation: true });
    expect(res.status).toBe(503);
    expect(failures(await scrapeOf('gateway'))).toBeGreaterThanOrEqual(before + 1);
  });
});
