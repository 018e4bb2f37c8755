import { ConfigProblems, env, readEnv, readProcessEnv, readRedisEnv, urlSchemes } from '@ziti/platform';
import { type ForwardedHeader, forwardedHeaders, parseTrustedProxies } from './edge-auth/client-address.transport.ts';
import { parseCorsOrigins } from './pipeline/cors.transport.ts';

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
  /** Characters of client service reads the gateway keeps in all (docs/adr/0015); 0 keeps none. */
  serviceAnswerCacheChars: number;
  /**
   * Proxies (addresses and CIDR ranges, canonical) whose forwarded client address the gateway
   * believes (`ZITI_TRUSTED_PROXIES`); none: the socket's peer is the client.
   */
  trustedProxies: string[];
  /** The header those proxies write the client's address in (`ZITI_TRUSTED_PROXY_HEADER`). */
  forwardedHeader: ForwardedHeader;
  /** Origins allowed to call cross-origin (`ZITI_CORS_ORIGINS`); undefined: any (the reference's CORS). */
  corsOrigins?: string[];
  /**
   * A read (GET) the owner has not answered after this long is sent again, to whichever replica
   * is live (`ZITI_GATEWAY_READ_RETRY_MS`); 0: sent once. So is a write with an `Idempotency-Key`
   * (its owner runs it once); other writes are always sent once.
   */
  readRetryMs: number;
  /**
   * How long the gateway waits for an owner's answer (`ZITI_REQUEST_TIMEOUT_MS`): the deadline every
   * request carries on the bus. An owner neither starts nor commits a write past it, so a 503 for a
   * write the owner refused means nothing happened; only a `TIMEOUT` leaves the outcome open.
   */
  requestTimeoutMs: number;
}

/** The gateway's settings (the cluster's and `npm start`'s); every problem is reported at once. */
export function readGatewayConfig(source: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const raw = readEnv(
    {
      ZITI_BIND: env.host('127.0.0.1'),
      ZITI_PORT: env.int(1280, 0, 65535),
      ZITI_ADVERTISED_ADDRESS: env.hostPort(),
      ZITI_SESSION_TIMEOUT_MINUTES: env.int(30, 0, 7 * 24 * 60),
      HEALTH_PORT: env.int(0, 0, 65535),
      ZITI_AUTH_RATE_LIMIT: env.int(600, 0, 1_000_000),
      ZITI_AUTH_RATE_BURST: env.int(200, 1, 1_000_000),
      ZITI_GATEWAY_ANSWER_CACHE: env.int(20_000, 0, 10_000_000),
      ZITI_GATEWAY_SERVICE_ANSWER_CACHE_MIB: env.int(64, 0, 65_536),
      ZITI_TRUSTED_PROXIES: parseTrustedProxies,
      // Header names are case-insensitive: `X-Forwarded-For` is accepted as written.
      ZITI_TRUSTED_PROXY_HEADER: (raw: string | undefined, name: string) =>
        env.oneOf(forwardedHeaders, 'x-forwarded-for')(raw?.toLowerCase(), name),
      ZITI_CORS_ORIGINS: parseCorsOrigins,
      ZITI_GATEWAY_READ_RETRY_MS: env.int(1_500, 0, 10_000),
      ZITI_REQUEST_TIMEOUT_MS: env.int(10_000, 1_000, 120_000),
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
    serviceAnswerCacheChars: raw.ZITI_GATEWAY_SERVICE_ANSWER_CACHE_MIB * 1024 * 1024,
    trustedProxies: raw.ZITI_TRUSTED_PROXIES,
    forwardedHeader: raw.ZITI_TRUSTED_PROXY_HEADER,
    ...(raw.ZITI_CORS_ORIGINS ? { corsOrigins: raw.ZITI_CORS_ORIGINS } : {}),
    readRetryMs: raw.ZITI_GATEWAY_READ_RETRY_MS,
    requestTimeoutMs: raw.ZITI_REQUEST_TIMEOUT_MS,
  };
}

export interface GatewayProcessConfig {
  settings: GatewayConfig;
  nats: { url: string; namespace: string };
  /** Where the API sessions live. */
  redis: { url: string; keyPrefix: string };
}

/**
 * Everything a gateway process reads, checked before it connects to anything: its settings, NATS,
 * Redis, logging. Every problem is reported at once.
 */
export function readGatewayProcessConfig(source: NodeJS.ProcessEnv = process.env): GatewayProcessConfig {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  const settings = problems.take(() => readGatewayConfig(source));
  const nats = problems.take(() =>
    readEnv({ NATS_URL: env.url(urlSchemes.nats), ZITI_BUS_NAMESPACE: env.token('') }, source),
  );
  const redis = problems.take(() => readRedisEnv(source));
  problems.done();
  return { settings: settings!, nats: { url: nats!.NATS_URL, namespace: nats!.ZITI_BUS_NAMESPACE }, redis: redis! };
}
