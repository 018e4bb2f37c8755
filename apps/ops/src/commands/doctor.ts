import { type EntityOwner, maintenanceCallContracts } from '@ziti/contracts';
import {
  type Database,
  NatsBus,
  callService,
  createLogger,
  env as envSpec,
  openDatabase,
  platformMigrations,
  queryRows,
  readEnv,
  redisPersistence,
  redisWithoutPersistence,
  urlSchemes,
} from '@ziti/platform';
import { Redis } from 'ioredis';
import type { DatabaseService } from '../cli.ts';
import { connectNats, eventStreamState } from '../nats.ts';
import { type Io, databaseUrlProblem, databaseVars, describeError, migrationsOf, plural } from '../support.ts';

export type Verdict = 'OK' | 'WARN' | 'FAIL';

/** An outbox whose oldest unpublished event is older than this is a warning, then a failure. */
const outboxWarnSeconds = 60;
const outboxFailSeconds = 15 * 60;

class Report {
  failed = 0;
  warned = 0;
  constructor(private readonly io: Io) {}

  line(verdict: Verdict, check: string, detail: string): void {
    if (verdict === 'FAIL') this.failed++;
    if (verdict === 'WARN') this.warned++;
    this.io.out(`${verdict.padEnd(4)} ${check}: ${detail}`);
  }
}

/** A read model this far behind its owner is a warning, then a failure (issue 35: 2 s at p99). */
const lagWarnSeconds = 2;
const lagFailSeconds = 60;

/** What each database said of its consumers, for the lag check once every database was read. */
interface ConsumerCursor {
  service: DatabaseService;
  consumer: string;
  source: string;
  watermark: number;
}

/** Each service's database: reachable, migrations current, outbox drained, nothing parked, consumers in step. */
async function checkDatabase(
  service: DatabaseService,
  io: Io,
  report: Report,
  cursorsSeen: ConsumerCursor[] = [],
): Promise<void> {
  const problem = databaseUrlProblem(service, io.env);
  if (problem) {
    report.line('WARN', `postgres ${service}`, `not checked: ${problem}`);
    return;
  }
  let database: Database | undefined;
  try {
    database = await openDatabase({ url: io.env[databaseVars[service]]!, poolSize: 2 });
    const [version] = await queryRows<{ v: string }>(database.db, `select current_setting('server_version') as v`);
    report.line('OK', `postgres ${service}`, `reachable (PostgreSQL ${version?.v ?? '?'})`);
  } catch (err) {
    report.line('FAIL', `postgres ${service}`, `cannot reach ${databaseVars[service]}: ${describeError(err)}`);
    await database?.close().catch(() => undefined);
    return;
  }
  try {
    const build = [...platformMigrations, ...(await migrationsOf(service))].map((m) => m.version);
    const [present] = await queryRows<{ present: boolean }>(
      database.db,
      `select to_regclass('schema_migrations') is not null as present`,
    );
    const applied = present?.present
      ? (await queryRows<{ version: string }>(database.db, 'select version from schema_migrations')).map(
          (r) => r.version,
        )
      : [];
    const pending = build.filter((v) => !applied.includes(v));
    const unknown = applied.filter((v) => !build.includes(v));
    if (pending.length > 0)
      report.line(
        'FAIL',
        `migrations ${service}`,
        `${plural(pending.length, 'migration')} pending (${pending.join(', ')}): run migrate`,
      );
    else if (unknown.length > 0)
      report.line(
        'WARN',
        `migrations ${service}`,
        `the database has migrations this build does not know (${unknown.join(', ')}): a newer build migrated it`,
      );
    else report.line('OK', `migrations ${service}`, `current (${build.length})`);
    if (!present?.present) return;

    const [outbox] = await queryRows<{ pending: number; oldest: number | null }>(
      database.db,
      `select count(*)::int as pending, extract(epoch from now() - min(created_at))::float8 as oldest
         from outbox where published_at is null`,
    );
    const oldest = Math.round(outbox?.oldest ?? 0);
    const backlog = outbox?.pending ?? 0;
    if (backlog === 0) report.line('OK', `outbox ${service}`, 'every event published');
    else
      report.line(
        oldest >= outboxFailSeconds ? 'FAIL' : oldest >= outboxWarnSeconds ? 'WARN' : 'OK',
        `outbox ${service}`,
        `${plural(backlog, 'event')} not yet published, the oldest ${oldest} s old${oldest >= outboxWarnSeconds ? ' (is NATS reachable from the service? is it running?)' : ''}`,
      );

    const parked = await queryRows<{ consumer: string; reason: string; count: number }>(
      database.db,
      `select consumer, reason, count(*)::int as count from parked_events group by consumer, reason order by consumer, reason`,
    );
    const total = parked.reduce((n, p) => n + p.count, 0);
    if (total === 0) report.line('OK', `parked events ${service}`, 'none');
    else
      report.line(
        'WARN',
        `parked events ${service}`,
        `${plural(total, 'event')} parked (${parked
          .slice(0, 3)
          .map((p) => `${p.consumer}: ${p.count}, ${p.reason}`)
          .join('; ')}${parked.length > 3 ? '; …' : ''}): run replay-parked`,
      );

    const cursors = await queryRows<{
      consumer: string;
      source: string;
      resync: boolean;
      gap: number | null;
      watermark: string | number;
    }>(
      database.db,
      `select consumer, source, resync_required as resync, watermark,
              extract(epoch from now() - gap_since)::float8 as gap from event_cursors order by consumer, source`,
    );
    for (const c of cursors)
      cursorsSeen.push({ service, consumer: c.consumer, source: c.source, watermark: Number(c.watermark) });
    const waiting = cursors.filter((c) => c.resync);
    const gaps = cursors.filter((c) => (c.gap ?? 0) > 60);
    if (waiting.length === 0 && gaps.length === 0)
      report.line('OK', `consumers ${service}`, `${plural(cursors.length, 'consumer')} in step`);
    else
      report.line(
        'WARN',
        `consumers ${service}`,
        [
          ...waiting.map((c) => `${c.consumer} waits for a rebuild from ${c.source}`),
          ...gaps.map((c) => `${c.consumer} misses an event of ${c.source} for ${Math.round(c.gap!)} s`),
        ].join('; '),
      );
  } catch (err) {
    report.line('FAIL', `database ${service}`, describeError(err));
  } finally {
    await database.close().catch(() => undefined);
  }
}

/**
 * How far each consumer trails its owner: the owner's events after the consumer's watermark, and
 * how long ago the first of them was committed (read from the owner's outbox, which keeps published
 * events until they are pruned). Owners whose database was not read are left out.
 */
async function checkConsumerLag(cursors: ConsumerCursor[], io: Io, report: Report): Promise<void> {
  const bySource = new Map<string, ConsumerCursor[]>();
  for (const c of cursors) bySource.set(c.source, [...(bySource.get(c.source) ?? []), c]);
  for (const [source, trailing] of bySource) {
    const owner = source as DatabaseService;
    if (!(owner in databaseVars) || databaseUrlProblem(owner, io.env)) continue;
    let database: Database | undefined;
    try {
      database = await openDatabase({ url: io.env[databaseVars[owner]]!, poolSize: 1 });
      const [last] = await queryRows<{ last: string | number }>(
        database.db,
        'select last from event_position where id = 1',
      );
      const head = Number(last?.last ?? 0);
      for (const c of trailing) {
        const behind = Math.max(0, head - c.watermark);
        const check = `lag ${c.consumer}`;
        if (behind === 0) {
          report.line('OK', check, `in step with ${source} (position ${head})`);
          continue;
        }
        const [first] = await queryRows<{ age: number | null }>(
          database.db,
          'select extract(epoch from now() - created_at)::float8 as age from outbox where position = $1',
          [c.watermark + 1],
        );
        const age = first?.age ?? null;
        const verdict = age === null ? 'WARN' : age >= lagFailSeconds ? 'FAIL' : age >= lagWarnSeconds ? 'WARN' : 'OK';
        report.line(
          verdict,
          check,
          `${plural(behind, 'event')} of ${source} not applied yet${age === null ? ' (the oldest is no longer in its outbox)' : `, the oldest committed ${age.toFixed(1)} s ago`}`,
        );
      }
    } catch (err) {
      report.line('WARN', `lag of ${source}'s consumers`, `not checked: ${describeError(err)}`);
    } finally {
      await database?.close().catch(() => undefined);
    }
  }
}

/** NATS reachable and the event stream present; answers whether the bus can be used. */
async function checkNats(io: Io, report: Report): Promise<{ url: string; namespace: string } | undefined> {
  let nats: { NATS_URL: string; ZITI_BUS_NAMESPACE: string };
  try {
    nats = readEnv({ NATS_URL: envSpec.url(urlSchemes.nats), ZITI_BUS_NAMESPACE: envSpec.token('') }, io.env);
  } catch (err) {
    report.line('FAIL', 'nats', (err as { problems?: string[] }).problems?.join('; ') ?? describeError(err));
    return undefined;
  }
  let nc;
  try {
    nc = await connectNats(nats.NATS_URL);
  } catch (err) {
    report.line('FAIL', 'nats', `cannot reach NATS_URL: ${describeError(err)}`);
    return undefined;
  }
  try {
    report.line(
      'OK',
      'nats',
      `reachable (server ${nc.info?.version ?? '?'}${nc.info?.jetstream ? ', JetStream on' : ''})`,
    );
    const stream = await eventStreamState(nc, nats.ZITI_BUS_NAMESPACE);
    if (stream.exists)
      report.line('OK', 'event stream', `${stream.name} present, ${plural(stream.messages, 'event')} kept`);
    else
      report.line(
        'FAIL',
        'event stream',
        `${stream.name} is missing (the services make it when they first publish: are they running?)`,
      );
  } catch (err) {
    report.line('FAIL', 'event stream', `JetStream does not answer: ${describeError(err)}`);
  } finally {
    await nc.close().catch(() => undefined);
  }
  return { url: nats.NATS_URL, namespace: nats.ZITI_BUS_NAMESPACE };
}

/** Redis reachable, and whether it keeps the API sessions over a restart. */
async function checkRedis(io: Io, report: Report): Promise<void> {
  let url: string;
  try {
    url = readEnv({ REDIS_URL: envSpec.url(urlSchemes.redis) }, io.env).REDIS_URL;
  } catch (err) {
    report.line('FAIL', 'redis', (err as { problems?: string[] }).problems?.join('; ') ?? describeError(err));
    return;
  }
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 5_000,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // The connection's own error says why (refused, unknown host, authentication); `connect` only that it closed.
  let cause: unknown;
  redis.on('error', (err: unknown) => {
    cause ??= err;
  });
  try {
    await redis.connect();
    await redis.ping();
    report.line('OK', 'redis', 'reachable');
    const p = await redisPersistence(redis);
    if (p.persists === undefined)
      report.line(
        'WARN',
        'redis persistence',
        'Redis refused CONFIG: make sure it keeps the API sessions over a restart',
      );
    else if (!p.persists) report.line('WARN', 'redis persistence', redisWithoutPersistence);
    else
      report.line(
        'OK',
        'redis persistence',
        [
          p.appendOnly ? 'append-only file' : '',
          p.snapshots ? 'RDB snapshots' : '',
          p.replicas ? plural(p.replicas, 'replica') : '',
        ]
          .filter(Boolean)
          .join(', '),
      );
  } catch (err) {
    report.line('FAIL', 'redis', `cannot reach REDIS_URL: ${describeError(cause ?? err)}`);
  } finally {
    redis.disconnect();
  }
}

/**
 * Each service's data-integrity check over the bus (the maintenance call `/database/check-data-integrity`
 * gathers): its own data, and its read models against their owners. A finding is looked at again a
 * moment later, since events in flight can show as a difference for that moment (ADR 0005).
 */
async function checkIntegrity(
  services: readonly DatabaseService[],
  nats: { url: string; namespace: string },
  report: Report,
): Promise<void> {
  const bus = await NatsBus.connect({
    url: nats.url,
    name: 'ziti-edge-ops-doctor',
    namespace: nats.namespace,
    logger: createLogger('ziti-edge-ops', 'silent'),
  });
  try {
    for (const service of services) {
      // Parked events are among a service's findings; they have their own line above. (audit serves
      // the same maintenance calls as the entity owners, though it owns no entity.)
      const check = async () =>
        (
          await callService(
            bus,
            service as EntityOwner,
            maintenanceCallContracts.integrityCheck,
            { fix: false },
            { timeoutMs: 120_000 },
          )
        ).results.filter((r) => !parkedFinding.test(r.description));
      try {
        let results = await check();
        if (results.length > 0) {
          await new Promise((r) => setTimeout(r, 2_000));
          results = await check();
        }
        if (results.length === 0)
          report.line('OK', `integrity ${service}`, 'its data and read models agree with their owners');
        else
          report.line(
            'FAIL',
            `integrity ${service}`,
            `${plural(results.length, 'finding')}: ${results
              .slice(0, 3)
              .map((r) => r.description)
              .join('; ')}${results.length > 3 ? '; …' : ''} (POST /database/fix-data-integrity repairs read models)`,
          );
      } catch (err) {
        report.line('FAIL', `integrity ${service}`, `${service} does not answer over NATS: ${describeError(err)}`);
      }
    }
  } finally {
    await bus.close().catch(() => undefined);
  }
}

/** How `parkedEventResults` (packages/platform/src/events/consumer.ts) words a finding. */
const parkedFinding = /^\d+ event\(s\) of \S+ parked by /;

/** Every check, one line each; 1 when one failed. */
export async function doctor(
  options: { services: DatabaseService[]; skipIntegrity: boolean },
  io: Io,
): Promise<number> {
  const report = new Report(io);
  const cursors: ConsumerCursor[] = [];
  for (const service of options.services) await checkDatabase(service, io, report, cursors);
  await checkConsumerLag(cursors, io, report);
  const nats = await checkNats(io, report);
  await checkRedis(io, report);
  if (options.skipIntegrity) report.line('OK', 'integrity', 'not checked (--skip-integrity)');
  else if (!nats) report.line('FAIL', 'integrity', 'not checked: NATS is not usable');
  else await checkIntegrity(options.services, nats, report);
  io.err(
    report.failed > 0
      ? `doctor: ${plural(report.failed, 'check')} failed, ${report.warned} warned`
      : `doctor: no check failed${report.warned > 0 ? `, ${plural(report.warned, 'warning')}` : ''}`,
  );
  return report.failed > 0 ? 1 : 0;
}
