import {
  ConfigProblems,
  env,
  readClusterUrls,
  readEnv,
  readProcessEnv,
  readRedisEnv,
  readSecretKeys,
  readServiceEnv,
} from '@ziti/platform';
import type { AuthConfig } from './app.ts';

/** The environment variable of auth's own Postgres database in the cluster. */
export const authDatabaseVar = 'AUTH_DATABASE_URL';

/** auth's settings (the cluster's and `npm start`'s); every problem is reported at once. */
export function readAuthConfig(source: NodeJS.ProcessEnv = process.env): AuthConfig {
  const problems = new ConfigProblems();
  const raw = problems.take(() =>
    readEnv(
      {
        ZITI_ADMIN_USERNAME: env.string('admin'),
        ZITI_ADMIN_PASSWORD: env.optional(),
        ZITI_SESSION_TIMEOUT_MINUTES: env.int(30, 0, 7 * 24 * 60),
        ZITI_HASH_CONCURRENCY: env.int(4, 1, 64),
        ZITI_HASH_QUEUE_LIMIT: env.int(256, 0, 100_000),
        ZITI_HASH_NICE: env.int(5, 0, 19),
        ZITI_TOTP_ISSUER: env.string('openziti.io'),
        ZITI_ADVERTISED_ADDRESS: env.hostPort(),
        ZITI_PORT: env.int(1280, 0, 65535),
      },
      source,
    ),
  );
  const keys = problems.take(() => readSecretKeys(source));
  problems.done();
  const minutes = raw!.ZITI_SESSION_TIMEOUT_MINUTES < 1 ? 30 : raw!.ZITI_SESSION_TIMEOUT_MINUTES;
  return {
    sessionTimeoutSeconds: minutes * 60,
    hashConcurrency: raw!.ZITI_HASH_CONCURRENCY,
    hashQueueLimit: raw!.ZITI_HASH_QUEUE_LIMIT,
    hashNice: raw!.ZITI_HASH_NICE,
    secretKey: keys!.current,
    previousSecretKeys: keys!.previous,
    totpIssuer: raw!.ZITI_TOTP_ISSUER,
    advertisedAddress: raw!.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw!.ZITI_PORT}`,
    ...(raw!.ZITI_ADMIN_PASSWORD
      ? { admin: { username: raw!.ZITI_ADMIN_USERNAME, password: raw!.ZITI_ADMIN_PASSWORD } }
      : {}),
  };
}

export interface AuthProcessConfig {
  settings: AuthConfig;
  /** Where the API sessions live. */
  redis: { url: string; keyPrefix: string };
}

/**
 * Everything an auth process reads, checked before it connects to anything: its settings, Redis,
 * NATS, its database, logging. `migrate` (`main.ts migrate`) needs only its database (and NATS,
 * which the entry reads first).
 */
export function readAuthProcessConfig(
  source: NodeJS.ProcessEnv = process.env,
  options: { migrateOnly?: boolean } = {},
): AuthProcessConfig {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  problems.take(() => readServiceEnv(authDatabaseVar, source));
  problems.take(() => readClusterUrls(authDatabaseVar, source));
  const settings = options.migrateOnly ? undefined : problems.take(() => readAuthConfig(source));
  const redis = options.migrateOnly ? undefined : problems.take(() => readRedisEnv(source));
  problems.done();
  return { settings: settings!, redis: redis! };
}
