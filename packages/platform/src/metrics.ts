import { ApiError, statusOf } from '@ziti/contracts';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { NoRespondersError, RequestTimeoutError } from './bus/bus.ts';

/**
 * The Prometheus metrics of this process (`GET /metrics` on the health port): one registry per
 * process with the process metrics of prom-client and the controller's series below. Under
 * `npm start` every service shares the process, so whatever belongs to one service carries a
 * `service` (or `consumer`) label. A series is registered when its subsystem first uses it, so a
 * process shows only what it runs (the gateway no outbox, only auth the password-hash queue).
 */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

/** The text exposition of every series of this process, and its content type. */
export async function renderMetrics(): Promise<{ contentType: string; body: string }> {
  return { contentType: metricsRegistry.contentType, body: await metricsRegistry.metrics() };
}

/** A series created (and registered) on first use. */
function lazy<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

const latencyBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

// ---------------------------------------------------------------------------------------------
// Bus requests (both buses): latency by target service and kind, failures by reason.

const busSeries = lazy(() => ({
  seconds: new Histogram({
    name: 'ziti_bus_request_duration_seconds',
    help: 'Bus request/reply latency as the caller sees it, by target service and kind (operation, call)',
    labelNames: ['target', 'kind'],
    buckets: latencyBuckets,
    registers: [metricsRegistry],
  }),
  failures: new Counter({
    name: 'ziti_bus_request_failures_total',
    help: 'Bus requests that failed, by target service, kind and reason (no_responders, timeout, error_reply: a 5xx answer, transport); 4xx answers are not failures',
    labelNames: ['target', 'kind', 'reason'],
    registers: [metricsRegistry],
  }),
  refused: new Counter({
    name: 'ziti_bus_requests_refused_total',
    help: 'Bus requests this owner refused, having done nothing: their deadline passed before the write could start or commit, or too many waited for a database connection; by target service, kind and stage (start, commit, queue)',
    labelNames: ['target', 'kind', 'stage'],
    registers: [metricsRegistry],
  }),
}));

/** Counts a request the owner refused as not carried out (`subject` without the namespace). */
export function observeRefusedBusRequest(subject: string, stage: 'start' | 'commit' | 'queue'): void {
  busSeries().refused.inc({ ...busTarget(subject), stage });
}

/** `ziti.rpc.<owner>.op.…` / `ziti.rpc.<owner>.call.…` → target and kind (bounded label values). */
export function busTarget(subject: string): { target: string; kind: string } {
  const [root, rpc, owner, kind] = subject.split('.');
  if (root !== 'ziti' || rpc !== 'rpc' || !owner) return { target: 'other', kind: 'other' };
  return { target: owner, kind: kind === 'op' ? 'operation' : kind === 'call' ? 'call' : 'other' };
}

function busFailureReason(err: unknown): string | undefined {
  if (err instanceof NoRespondersError) return 'no_responders';
  if (err instanceof RequestTimeoutError) return 'timeout';
  if (err instanceof ApiError) return statusOf(err.code) >= 500 ? 'error_reply' : undefined;
  return 'transport';
}

/** Times one bus request (`subject` without the namespace) and counts its failure, if any. */
export async function observeBusRequest<T>(subject: string, run: () => Promise<T>): Promise<T> {
  const labels = busTarget(subject);
  const series = busSeries();
  const end = series.seconds.startTimer(labels);
  try {
    return await run();
  } catch (err) {
    const reason = busFailureReason(err);
    if (reason) series.failures.inc({ ...labels, reason });
    throw err;
  } finally {
    end();
  }
}

// ---------------------------------------------------------------------------------------------
// Outbox (measured by the relay leader of each service's database on every cycle).

/** When the oldest unpublished row was written (ms), per service; 0 when the outbox is drained. */
const oldestPending = new Map<string, number>();
const outboxSeries = lazy(() => ({
  pending: new Gauge({
    name: 'ziti_outbox_pending_events',
    help: 'Outbox rows not yet published, as the relay leader last read them',
    labelNames: ['service'],
    registers: [metricsRegistry],
  }),
  oldestAge: new Gauge({
    name: 'ziti_outbox_oldest_pending_age_seconds',
    help: 'Age of the oldest outbox row not yet published (0 when the outbox is drained)',
    labelNames: ['service'],
    registers: [metricsRegistry],
    collect() {
      this.reset();
      const now = Date.now();
      for (const [service, at] of oldestPending) this.set({ service }, at ? Math.max(0, now - at) / 1000 : 0);
    },
  }),
  published: new Counter({
    name: 'ziti_outbox_published_events_total',
    help: 'Events the outbox relay published to the bus',
    labelNames: ['service'],
    registers: [metricsRegistry],
  }),
}));

export const outboxMetrics = {
  /** What the relay read: the rows waiting and when the oldest of them was written. */
  pending(service: string, depth: number, oldestCreatedAt: Date | string | undefined): void {
    outboxSeries().pending.set({ service }, depth);
    oldestPending.set(service, oldestCreatedAt === undefined ? 0 : new Date(oldestCreatedAt).getTime());
  },
  published(service: string, count: number): void {
    if (count > 0) outboxSeries().published.inc({ service }, count);
  },
  /** This process no longer leads the relay of `service`: another replica reports it. */
  notLeading(service: string): void {
    if (!oldestPending.has(service)) return;
    oldestPending.delete(service);
    outboxSeries().pending.remove({ service });
  },
};

// ---------------------------------------------------------------------------------------------
// Event consumers (updated on each consumer's periodic tick).

const consumerSeries = lazy(() => ({
  pending: new Gauge({
    name: 'ziti_event_consumer_pending_events',
    help: 'Events on the stream not yet delivered to the durable consumer (JetStream num_pending; 0 on the in-process bus, which delivers at publish)',
    labelNames: ['consumer', 'source'],
    registers: [metricsRegistry],
  }),
  parked: new Gauge({
    name: 'ziti_event_consumer_parked_events',
    help: 'Events parked by the consumer (it could not process them), per consumer and source',
    labelNames: ['consumer', 'source'],
    registers: [metricsRegistry],
  }),
  lag: new Histogram({
    name: 'ziti_event_consumer_lag_seconds',
    help: "From an event's commit at its owner to its commit here (the read model's lag behind its owner), per consumer and source",
    labelNames: ['consumer', 'source'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [metricsRegistry],
  }),
}));

export const consumerMetrics = {
  pending(consumer: string, source: string, count: number): void {
    consumerSeries().pending.set({ consumer, source }, count);
  },
  parked(consumer: string, source: string, count: number): void {
    consumerSeries().parked.set({ consumer, source }, count);
  },
  /** Events applied now, each committed at its owner at `occurredAt`. */
  applied(consumer: string, source: string, occurredAt: readonly string[]): void {
    const now = Date.now();
    const series = consumerSeries().lag;
    for (const at of occurredAt) {
      const t = Date.parse(at);
      if (Number.isFinite(t)) series.observe({ consumer, source }, Math.max(0, now - t) / 1000);
    }
  },
};

// ---------------------------------------------------------------------------------------------
// Database pools (read at scrape time).

/** What a pool answers about itself (pg.Pool's counters). */
export interface PoolStats {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly options: { max?: number };
}

const pools = new Map<string, Set<PoolStats>>();

function poolGauge(name: string, help: string, read: (p: PoolStats) => number) {
  return lazy(
    () =>
      new Gauge({
        name,
        help,
        labelNames: ['service'],
        registers: [metricsRegistry],
        collect() {
          this.reset();
          for (const [service, set] of pools) {
            let sum = 0;
            for (const p of set) sum += read(p);
            this.set({ service }, sum);
          }
        },
      }),
  );
}

const poolSeries = [
  poolGauge('ziti_db_pool_connections', 'Open Postgres connections of the pool (busy and idle)', (p) => p.totalCount),
  poolGauge('ziti_db_pool_idle_connections', 'Idle Postgres connections of the pool', (p) => p.idleCount),
  poolGauge(
    'ziti_db_pool_waiting_requests',
    'Queries waiting for a pooled connection (the pool is exhausted)',
    (p) => p.waitingCount,
  ),
  poolGauge('ziti_db_pool_max_connections', 'Size limit of the pool', (p) => p.options.max ?? 10),
];

/** Reports a service's connection pool until the returned function is called (at close). */
export function watchPool(service: string, pool: PoolStats): () => void {
  for (const s of poolSeries) s();
  let set = pools.get(service);
  if (!set) pools.set(service, (set = new Set()));
  set.add(pool);
  return () => {
    set.delete(pool);
    if (set.size === 0 && pools.get(service) === set) pools.delete(service);
  };
}

// ---------------------------------------------------------------------------------------------
// API sessions (read at scrape time from the store).

const sessionSources = new Set<{ countLive(): Promise<number> }>();
const apiSessions = lazy(
  () =>
    new Gauge({
      name: 'ziti_api_sessions',
      help: 'Live API sessions in the session store (Redis: the live-session index, which may still hold sessions expired since the last sweep)',
      registers: [metricsRegistry],
      async collect() {
        let sum = 0;
        for (const source of sessionSources) sum += await source.countLive().catch(() => 0);
        this.set(sum);
      },
    }),
);

/** Reports the live sessions of `store` (once per process: its owner, auth) until the returned function is called. */
export function watchApiSessions(store: { countLive(): Promise<number> }): () => void {
  apiSessions();
  sessionSources.add(store);
  return () => {
    sessionSources.delete(store);
  };
}

// ---------------------------------------------------------------------------------------------
// The password-hash limiter of auth.

export const passwordHashMetrics = lazy(() => ({
  running: new Gauge({
    name: 'ziti_password_hash_running',
    help: 'Password hashes (argon2id) running now',
    registers: [metricsRegistry],
  }),
  queued: new Gauge({
    name: 'ziti_password_hash_queued',
    help: 'Callers waiting for a password-hash slot',
    registers: [metricsRegistry],
  }),
  rejected: new Counter({
    name: 'ziti_password_hash_rejected_total',
    help: 'Password checks refused because the hash queue was full (429)',
    registers: [metricsRegistry],
  }),
  waitSeconds: new Histogram({
    name: 'ziti_password_hash_wait_seconds',
    help: 'Time a password hash waited for a slot (0 when one was free)',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [metricsRegistry],
  }),
}));

// ---------------------------------------------------------------------------------------------
// HTTP requests at the gateway.

const httpSeries = lazy(() => ({
  requests: new Counter({
    name: 'ziti_http_requests_total',
    help: 'Requests the gateway answered, by operation (<api>.<operationId>, or unmatched) and status',
    labelNames: ['operation', 'status'],
    registers: [metricsRegistry],
  }),
  seconds: new Histogram({
    name: 'ziti_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its answer, by operation',
    labelNames: ['operation'],
    buckets: latencyBuckets,
    registers: [metricsRegistry],
  }),
}));

/** One answered HTTP request (the operation label must come from the route table: bounded). */
export function observeHttpRequest(operation: string, status: number, seconds: number): void {
  const series = httpSeries();
  series.requests.inc({ operation, status: String(status) });
  series.seconds.observe({ operation }, seconds);
}

// ---------------------------------------------------------------------------------------------
// The gateway's answer cache (docs/adr/0015).

const answerCacheSeries = lazy(() => ({
  lookups: new Counter({
    name: 'ziti_gateway_answer_cache_lookups_total',
    help: 'Session-scoped reads the gateway looked up in its answer cache: hit, miss (asked the owner) or bypass (the caller has newer writes, or the cache does not follow the events)',
    labelNames: ['operation', 'result'],
    registers: [metricsRegistry],
  }),
  entries: new Gauge({
    name: 'ziti_gateway_answer_cache_entries',
    help: 'Answers the gateway keeps, by cache (identity: /current-identity; services: the client service reads)',
    labelNames: ['cache'],
    registers: [metricsRegistry],
  }),
  chars: new Gauge({
    name: 'ziti_gateway_answer_cache_characters',
    help: 'Characters of the answers the gateway keeps, by cache',
    labelNames: ['cache'],
    registers: [metricsRegistry],
  }),
  resets: new Counter({
    name: 'ziti_gateway_answer_cache_resets_total',
    help: 'Times the gateway forgot every kept answer because it may have missed events',
    registers: [metricsRegistry],
  }),
}));

export const answerCacheMetrics = {
  lookup: (operation: string, result: 'hit' | 'miss' | 'bypass') =>
    answerCacheSeries().lookups.inc({ operation, result }),
  entries: (cache: string, n: number, chars: number) => {
    answerCacheSeries().entries.set({ cache }, n);
    answerCacheSeries().chars.set({ cache }, chars);
  },
  reset: () => answerCacheSeries().resets.inc(),
};

// ---------------------------------------------------------------------------------------------
// auth's reports of authentication attempts (written in batches off the login's path, docs/adr/0021).

const authenticationAttemptSeries = lazy(() => ({
  queued: new Gauge({
    name: 'ziti_auth_attempts_queued',
    help: 'Authentication attempts reported and not yet written to the outbox',
    registers: [metricsRegistry],
  }),
  written: new Counter({
    name: 'ziti_auth_attempts_written_total',
    help: 'Authentication attempts written to the outbox (authentication.attempted)',
    registers: [metricsRegistry],
  }),
  dropped: new Counter({
    name: 'ziti_auth_attempts_dropped_total',
    help: 'Authentication attempts not recorded because the queue was full (or auth was stopping)',
    registers: [metricsRegistry],
  }),
}));

export const authenticationAttemptMetrics = {
  queued(count: number): void {
    authenticationAttemptSeries().queued.set(count);
  },
  written(count: number): void {
    if (count > 0) authenticationAttemptSeries().written.inc(count);
  },
  dropped(count: number): void {
    if (count > 0) authenticationAttemptSeries().dropped.inc(count);
  },
};

// ---------------------------------------------------------------------------------------------
// The router edge (fabric, docs/adr/0023).

interface RouterEdgeSource {
  connectedRouters(): number;
  channels(): number;
  apiSessions(): number;
  /** Router-to-router links this replica knows of (its routers' and the other replicas'). */
  links(): number;
  /** Those whose latency a router measured at one end at least. */
  measuredLinks(): number;
}

const routerEdgeSources = new Set<RouterEdgeSource>();

export const routerEdgeMetrics = lazy(() => ({
  connected: new Gauge({
    name: 'ziti_routers_connected',
    help: 'Routers admitted on this fabric replica whose control channel is open',
    registers: [metricsRegistry],
    collect() {
      let sum = 0;
      for (const s of routerEdgeSources) sum += s.connectedRouters();
      this.set(sum);
    },
  }),
  channels: new Gauge({
    name: 'ziti_router_channels',
    help: 'TLS connections on the control port of this replica, admitted or not yet',
    registers: [metricsRegistry],
    collect() {
      let sum = 0;
      for (const s of routerEdgeSources) sum += s.channels();
      this.set(sum);
    },
  }),
  apiSessions: new Gauge({
    name: 'ziti_router_api_sessions',
    help: 'API sessions this replica told its routers of',
    registers: [metricsRegistry],
    collect() {
      let sum = 0;
      for (const s of routerEdgeSources) sum += s.apiSessions();
      this.set(sum);
    },
  }),
  links: new Gauge({
    name: 'ziti_router_links',
    help: 'Router-to-router links this fabric replica routes circuits over',
    registers: [metricsRegistry],
    collect() {
      let sum = 0;
      for (const s of routerEdgeSources) sum += s.links();
      this.set(sum);
    },
  }),
  measuredLinks: new Gauge({
    name: 'ziti_router_links_measured',
    help: 'Links whose latency a router reported (their cost is no longer the initial 65 s per end)',
    registers: [metricsRegistry],
    collect() {
      let sum = 0;
      for (const s of routerEdgeSources) sum += s.measuredLinks();
      this.set(sum);
    },
  }),
  dials: new Counter({
    name: 'ziti_circuit_dials_total',
    help: 'Dials relayed by routers, by outcome (routed, or the refusal code)',
    labelNames: ['outcome'],
    registers: [metricsRegistry],
  }),
  dialSeconds: new Histogram({
    name: 'ziti_circuit_dial_duration_seconds',
    help: 'From a router relaying a dial to the answer, routed or refused',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [metricsRegistry],
  }),
  binds: new Counter({
    name: 'ziti_terminator_binds_total',
    help: 'Binds relayed by routers, by outcome (bound, or the refusal)',
    labelNames: ['outcome'],
    registers: [metricsRegistry],
  }),
  closes: new Counter({
    name: 'ziti_router_channel_closes_total',
    help: 'Control channels closed, by whether the router had been admitted',
    labelNames: ['admitted'],
    registers: [metricsRegistry],
  }),
}));

/** Reports the routers of one fabric composition until the returned function is called. */
export function watchRouterEdge(source: RouterEdgeSource): () => void {
  routerEdgeMetrics();
  routerEdgeSources.add(source);
  return () => {
    routerEdgeSources.delete(source);
  };
}
