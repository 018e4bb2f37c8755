import { env, readEnv } from '@ziti/platform';
import type { AuthConfig } from './app.ts';

export function readAuthConfig(source: NodeJS.ProcessEnv = process.env): AuthConfig {
  const raw = readEnv(
    {
      ZITI_ADMIN_USERNAME: env.string('admin'),
      ZITI_ADMIN_PASSWORD: env.optional(),
      ZITI_SESSION_TIMEOUT_MINUTES: env.int(30, 0, 7 * 24 * 60),
      ZITI_HASH_CONCURRENCY: env.int(4, 1, 64),
      ZITI_HASH_QUEUE_LIMIT: env.int(256, 0, 100_000),
      ZITI_HASH_NICE: env.int(5, 0, 19),
      ZITI_SECRET_KEY: env.secret(32),
      ZITI_TOTP_ISSUER: env.string('openziti.io'),
      ZITI_ADVERTISED_ADDRESS: env.optional(),
      ZITI_PORT: env.int(1280, 0, 65535),
    },
    source,
  );
  const minutes = raw.ZITI_SESSION_TIMEOUT_MINUTES < 1 ? 30 : raw.ZITI_SESSION_TIMEOUT_MINUTES;
  return {
    sessionTimeoutSeconds: minutes * 60,
    hashConcurrency: raw.ZITI_HASH_CONCURRENCY,
    hashQueueLimit: raw.ZITI_HASH_QUEUE_LIMIT,
    hashNice: raw.ZITI_HASH_NICE,
    secretKey: raw.ZITI_SECRET_KEY,
    totpIssuer: raw.ZITI_TOTP_ISSUER,
    advertisedAddress: raw.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw.ZITI_PORT}`,
    ...(raw.ZITI_ADMIN_PASSWORD
      ? { admin: { username: raw.ZITI_ADMIN_USERNAME, password: raw.ZITI_ADMIN_PASSWORD } }
      : {}),
  };
}
