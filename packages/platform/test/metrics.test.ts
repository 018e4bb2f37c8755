import { ApiError, eventTypes, subjects } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type Bus,
  type Database,
  InProcessBus,
  MemoryApiSessionStore,
  NoRespondersError,
  OutboxRelay,
  RequestTimeoutError,
  SourceConsumer,
  busTarget,
  createLogger,
  createUnitOfWork,
  metricsRegistry,
  migrate,
  observeHttpRequest,
  openDatabase,
  queryRows,
  renderMetrics,
  watchApiSessions,
  watchPool,
} from '../src/index.ts';

/** A test row travels as `identity.created`, with its own shape. */
const rowCreated = { ...eventTypes.identityCreated, schema: z.looseObject({ id: z.string() }) };

const logger = createLogger('test', 'silent');

/** The value of one sample of `name` (e.g. `x_count` of histogram `x`) whose labels include `labels`. */
async function sample(name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const family = name.replace(/_(count|sum|bucket)$/, '');
  const metric = metricsRegistry.getSingleMetric(metricsRegistry.getSingleMetric(name) ? name : family);
  if (!metric) return undefined;
  const { values } = await metric.get();
  const found = values.find(
    (v) =>
      ((v as { metricName?: string }).metricName ?? name) === name &&
      Object.entries(labels).every(([k, x]) => String((v.labels as Record<string, unknown>)[k]) === x),
  );
  return found?.value;
}

describe('process metrics', () => {
  it('serves the text exposition with the process metrics', async () => {
    const { contentType, body } = await renderMetrics();
    expect(contentType).toMatch(/^text\/plain/);
    expect(body).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(body).toContain('nodejs_eventloop_lag_seconds');
    expect(body).toContain('process_resident_memory_bytes');
  });
});

describe('bus request metrics', () => {
  const bus = new InProcessBus({ logger });
  afterAll(() => bus.close());

  it('labels requests by target service and kind', () => {
    expect(busTarget(subjects.call('auth', 'verify'))).toEqual({ target: 'auth', kind: 'call' });
    expect(busTarget(subjects.operation('policy', 'management', 'listServicePolicies'))).toEqual({
      target: 'policy',
      kind: 'operation',
    });
    expect(busTarget('something.else')).toEqual({ target: 'other', kind: 'other' });
  });

  it('times every request and counts transport failures and 5xx answers, not 4xx', async () => {
    const target = { target: 'mtest', kind: 'call' };
    bus.serve('ziti.rpc.mtest.call.>', 'q', async (payload) => {
      const p = payload as { fail?: 'notFound' | 'crash' | 'hang' };
      if (p.fail === 'notFound') throw new ApiError('NOT_FOUND', 'nothing here');
      if (p.fail === 'crash') throw new Error('handler bug');
      if (p.fail === 'hang') await new Promise((r) => setTimeout(r, 300));
      return 'ok';
    });
    await expect(bus.request('ziti.rpc.mtest.call.x', {})).resolves.toBe('ok');
    await expect(bus.request('ziti.rpc.mtest.call.x', { fail: 'notFound' })).rejects.toBeInstanceOf(ApiError);
    await expect(bus.request('ziti.rpc.mtest.call.x', { fail: 'crash' })).rejects.toBeInstanceOf(ApiError);
    await expect(bus.request('ziti.rpc.mtest.call.x', { fail: 'hang' }, { timeoutMs: 20 })).rejects.toBeInstanceOf(
      RequestTimeoutError,
    );
    await expect(bus.request('ziti.rpc.mtestdown.op.management.x', {})).rejects.toBeInstanceOf(NoRespondersError);

    expect(await sample('ziti_bus_request_duration_seconds_count', target)).toBe(4);
    expect(await sample('ziti_bus_request_failures_total', { ...target, reason: 'error_reply' })).toBe(1);
    expect(await sample('ziti_bus_request_failures_total', { ...target, reason: 'timeout' })).toBe(1);
    const down = { target: 'mtestdown', kind: 'operation', reason: 'no_responders' };
    expect(await sample('ziti_bus_request_failures_total', down)).toBe(1);
    const failures = (await metricsRegistry.getSingleMetric('ziti_bus_request_failures_total')!.get()).values;
    expect(failures.filter((v) => v.labels.target === 'mtest').map((v) => v.labels.reason)).not.toContain('transport');
  });
});

describe('outbox and consumer metrics (PGlite, in-process bus)', () => {
  let producer: Database;
  let consumerDb: Database;
  let publishFails = false;
  const bus = new InProcessBus({ logger });
  const flaky: Bus = {
    request: (...a) => bus.request(...a),
    serve: (...a) => bus.serve(...a),
    consume: (o) => bus.consume(o),
    close: () => bus.close(),
    publish: async (subject, event) => {
      if (publishFails) throw new Error('the stream is down');
      await bus.publish(subject, event);
    },
  };

  beforeAll(async () => {
    producer = await openDatabase({ pgliteMemory: true });
    consumerDb = await openDatabase({ pgliteMemory: true });
    await migrate(producer, []);
    await migrate(consumerDb, []);
  });
  afterAll(async () => {
    await bus.close();
    await producer?.close();
    await consumerDb?.close();
  });

  it('reports the outbox depth and the age of its oldest row from the relay, and counts what it published', async () => {
    const relay = new OutboxRelay(producer, flaky, 'auth', logger);
    const work = createUnitOfWork(producer, undefined, 'auth', (_tx, events) => events);
    await work(async (events) => {
      await events.emit(rowCreated, { id: 'a' });
      await events.emit(rowCreated, { id: 'b' });
    });
    publishFails = true;
    await expect(relay.flushAll()).rejects.toThrow(/stream is down/);
    expect(await sample('ziti_outbox_pending_events', { service: 'auth' })).toBe(2);
    expect(await sample('ziti_outbox_oldest_pending_age_seconds', { service: 'auth' })).toBeGreaterThanOrEqual(0);
    expect(await sample('ziti_outbox_published_events_total', { service: 'auth' })).toBeUndefined();

    publishFails = false;
    await relay.flushAll();
    expect(await sample('ziti_outbox_pending_events', { service: 'auth' })).toBe(0);
    expect(await sample('ziti_outbox_oldest_pending_age_seconds', { service: 'auth' })).toBe(0);
    expect(await sample('ziti_outbox_published_events_total', { service: 'auth' })).toBe(2);
    await relay.stop();
    // A relay that does not lead leaves the series to the replica that does.
    expect(await sample('ziti_outbox_pending_events', { service: 'auth' })).toBeUndefined();
  });

  it("reports a consumer's lag and parked events on its tick", async () => {
    await queryRows(
      consumerDb.db,
      "insert into event_cursors (consumer, source, resync_required) values ('policy-from-inventory', 'inventory', false)",
    );
    const consumer = new SourceConsumer({
      owner: 'policy',
      source: 'inventory',
      handlers: [],
      readModels: [],
      database: consumerDb,
      bus,
      logger,
      tickMs: 60_000,
    });
    await consumer.start();
    await consumer.tick();
    const labels = { consumer: 'policy-from-inventory', source: 'inventory' };
    expect(await sample('ziti_event_consumer_pending_events', labels)).toBe(0);
    expect(await sample('ziti_event_consumer_parked_events', labels)).toBe(0);
    // A type this build does not know is parked.
    await bus.publish(subjects.event('inventory', 'thing.unknown'), {
      id: 'inventory:1',
      type: 'thing.unknown',
      version: 1,
      source: 'inventory',
      sequence: 1,
      occurredAt: new Date().toISOString(),
      data: {},
    });
    await consumer.tick();
    expect(await sample('ziti_event_consumer_parked_events', labels)).toBe(1);
    await consumer.stop();
  });
});

describe('pool, session and HTTP metrics', () => {
  it('reads connection pools at scrape time, per service, until unwatched', async () => {
    const pool = { totalCount: 3, idleCount: 1, waitingCount: 2, options: { max: 7 } };
    const unwatch = watchPool('mtest-svc', pool);
    expect(await sample('ziti_db_pool_connections', { service: 'mtest-svc' })).toBe(3);
    expect(await sample('ziti_db_pool_idle_connections', { service: 'mtest-svc' })).toBe(1);
    expect(await sample('ziti_db_pool_waiting_requests', { service: 'mtest-svc' })).toBe(2);
    expect(await sample('ziti_db_pool_max_connections', { service: 'mtest-svc' })).toBe(7);
    pool.totalCount = 5;
    expect(await sample('ziti_db_pool_connections', { service: 'mtest-svc' })).toBe(5);
    unwatch();
    expect(await sample('ziti_db_pool_connections', { service: 'mtest-svc' })).toBeUndefined();
  });

  it('counts live API sessions from the store', async () => {
    const store = new MemoryApiSessionStore();
    const unwatch = watchApiSessions(store);
    const record = (id: string) => ({
      id,
      token: `t-${id}`,
      identityId: 'i',
      identityName: 'n',
      isAdmin: false,
      authenticatorId: 'a',
      authMethod: 'password',
      ipAddress: '127.0.0.1',
      configTypes: [],
      isMfaRequired: false,
      isMfaComplete: false,
      tags: {},
      createdAt: new Date().toISOString(),
      updatedAt: new Date().toISOString(),
    });
    await store.create(record('s1'), 60);
    await store.create(record('s2'), 60);
    expect(await sample('ziti_api_sessions')).toBe(2);
    await store.end('s1', 'logout');
    expect(await sample('ziti_api_sessions')).toBe(1);
    unwatch();
    expect(await sample('ziti_api_sessions')).toBe(0);
  });

  it('counts HTTP requests by operation and status and observes their latency', async () => {
    observeHttpRequest('management.mtest', 200, 0.012);
    observeHttpRequest('management.mtest', 200, 0.02);
    observeHttpRequest('management.mtest', 404, 0.001);
    expect(await sample('ziti_http_requests_total', { operation: 'management.mtest', status: '200' })).toBe(2);
    expect(await sample('ziti_http_requests_total', { operation: 'management.mtest', status: '404' })).toBe(1);
    expect(await sample('ziti_http_request_duration_seconds_count', { operation: 'management.mtest' })).toBe(3);
    expect(
      await sample('ziti_http_request_duration_seconds_bucket', { operation: 'management.mtest', le: '0.01' }),
    ).toBe(1);
  });
});
