import { createHash } from 'node:crypto';
import { ConfigProblems, env, readClusterUrls, readEnv, readProcessEnv, readServiceEnv } from '@ziti/platform';
import { type SinkConfig, readSinkConfig } from './sinks/sinks.domain.ts';

/** The environment variable of audit's own Postgres database in the cluster (like `<SERVICE>_DATABASE_URL`). */
export const auditDatabaseVar = 'AUDIT_DATABASE_URL';

export interface AuditConfig {
  /** Records older than this many days are deleted (`ZITI_AUDIT_RETENTION_DAYS`, default 90). */
  retentionDays: number;
  /**
   * This controller's id, the `event_src_id` of the entity-change events: the id `/controllers` lists
   * (auth derives it from the advertised address the same way).
   */
  controllerId: string;
  /** The event sinks that follow the change feed (`ZITI_EVENTS_*`, docs/extensions.md); none by default. */
  sinks: SinkConfig;
}

/** Reads and checks audit's settings, the event sinks' included; every problem is reported at once, before anything starts. */
export function readAuditConfig(source: NodeJS.ProcessEnv = process.env): AuditConfig {
  const problems = new ConfigProblems();
  const raw = problems.take(() =>
    readEnv(
      {
        ZITI_AUDIT_RETENTION_DAYS: env.int(90, 1, 36_500),
        ZITI_ADVERTISED_ADDRESS: env.hostPort(),
        ZITI_PORT: env.int(1280, 0, 65535),
      },
      source,
    ),
  );
  const sinks = readSinkConfig(source);
  if (!sinks.ok) problems.add(...sinks.problems);
  problems.done();
  const advertisedAddress = raw!.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw!.ZITI_PORT}`;
  return {
    retentionDays: raw!.ZITI_AUDIT_RETENTION_DAYS,
    controllerId: createHash('sha256').update(`controller:${advertisedAddress}`).digest('hex').slice(0, 16),
    sinks: (sinks as { config: SinkConfig }).config,
  };
}

/**
 * Everything an audit process reads, checked before it connects to anything: its settings and
 * sinks, NATS, its database, logging (`migrate` needs no settings).
 */
export function readAuditProcessConfig(
  source: NodeJS.ProcessEnv = process.env,
  options: { migrateOnly?: boolean } = {},
): AuditConfig {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  problems.take(() => readServiceEnv(auditDatabaseVar, source));
  problems.take(() => readClusterUrls(auditDatabaseVar, source));
  const settings = options.migrateOnly ? undefined : problems.take(() => readAuditConfig(source));
  problems.done();
  return settings!;
}
