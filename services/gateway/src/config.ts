import { env, readEnv } from '@ziti/platform';

export interface GatewayConfig {
  bind: string;
  port: number;
  advertisedAddress: string;
  sessionTimeoutSeconds: number;
  healthPort: number;
  /** Authentication attempts per minute per client address (0 = unlimited), and the burst allowed. */
  authRateLimit?: { perMinute: number; burst: number };
  /** Identities whose `/current-identity` the gateway keeps (docs/adr/0015); 0 keeps none. */
  answerCacheEntries: number;
}

export function readGatewayConfig(source: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const raw = readEnv(
    {
      ZITI_BIND: env.string('127.0.0.1'),
      ZITI_PORT: env.int(1280, 0, 65535),
      ZITI_ADVERTISED_ADDRESS: env.optional(),
      ZITI_SESSION_TIMEOUT_MINUTES: env.int(30, 0, 7 * 24 * 60),
      HEALTH_PORT: env.int(0, 0, 65535),
      ZITI_AUTH_RATE_LIMIT: env.int(600, 0, 1_000_000),
      ZITI_AUTH_RATE_BURST: env.int(200, 1, 1_000_000),
      ZITI_GATEWAY_ANSWER_CACHE: env.int(20_000, 0, 10_000_000),
    },
    source,
  );
  // Below one minute the reference falls back to its 30 minute default (ZITI-FACTS §1.3).
  const minutes = raw.ZITI_SESSION_TIMEOUT_MINUTES < 1 ? 30 : raw.ZITI_SESSION_TIMEOUT_MINUTES;
  return {
    bind: raw.ZITI_BIND,
    port: raw.ZITI_PORT,
    advertisedAddress: raw.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw.ZITI_PORT}`,
    sessionTimeoutSeconds: minutes * 60,
    healthPort: raw.HEALTH_PORT,
    authRateLimit: { perMinute: raw.ZITI_AUTH_RATE_LIMIT, burst: raw.ZITI_AUTH_RATE_BURST },
    answerCacheEntries: raw.ZITI_GATEWAY_ANSWER_CACHE,
  };
}
