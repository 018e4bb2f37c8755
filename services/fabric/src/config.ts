import { ConfigProblems, env, readEnv, readProcessEnv, readRedisEnv, urlSchemes } from '@ziti/platform';
import { type ChannelLimits, defaultChannelLimits } from './control-channel/router-channel.transport.ts';

export interface FabricConfig {
  /** Where the control port listens (`ZITI_CTRL_BIND`, else `ZITI_BIND`, else 127.0.0.1). */
  bind: string;
  port: number;
  /** host:port routers are told to use (`ZITI_CTRL_ADVERTISED_ADDRESS`; default `localhost:<port>`). */
  advertisedAddress: string;
  /** How long a router's presence holds in inventory without this replica renewing it. */
  leaseMs: number;
  /** How long one route attempt waits for the routers' results. */
  routeTimeoutMs: number;
  maxConnections: number;
  limits: ChannelLimits;
}

/** fabric's settings, in the cluster and under `npm start`; every problem is reported at once. */
export function readFabricConfig(source: NodeJS.ProcessEnv = process.env): FabricConfig {
  const raw = readEnv(
    {
      ZITI_BIND: env.host('127.0.0.1'),
      ZITI_CTRL_BIND: (value: string | undefined, name: string) =>
        value === undefined ? undefined : env.host('127.0.0.1')(value, name),
      ZITI_CTRL_PORT: env.int(6262, 0, 65535),
      ZITI_CTRL_ADVERTISED_ADDRESS: env.hostPort(),
      ZITI_CTRL_LEASE_SECONDS: env.int(15, 3, 600),
      ZITI_CTRL_ROUTE_TIMEOUT_MS: env.int(10_000, 100, 60_000),
      ZITI_CTRL_MAX_CONNECTIONS: env.int(20_000, 1, 1_000_000),
      ZITI_CTRL_MAX_MESSAGE_BYTES: env.int(defaultChannelLimits.maxBodyBytes, 4_192, 64 * 1024 * 1024),
    },
    source,
  );
  return {
    bind: raw.ZITI_CTRL_BIND ?? raw.ZITI_BIND,
    port: raw.ZITI_CTRL_PORT,
    advertisedAddress: raw.ZITI_CTRL_ADVERTISED_ADDRESS ?? `localhost:${raw.ZITI_CTRL_PORT}`,
    leaseMs: raw.ZITI_CTRL_LEASE_SECONDS * 1000,
    routeTimeoutMs: raw.ZITI_CTRL_ROUTE_TIMEOUT_MS,
    maxConnections: raw.ZITI_CTRL_MAX_CONNECTIONS,
    limits: { ...defaultChannelLimits, maxBodyBytes: raw.ZITI_CTRL_MAX_MESSAGE_BYTES },
  };
}

export interface FabricProcessConfig {
  settings: FabricConfig;
  nats: { url: string; namespace: string };
  /** Where the circuits live (shared by the replicas). */
  redis: { url: string; keyPrefix: string };
  healthPort: number;
}

/** Everything a fabric process reads, checked before it connects to anything. */
export function readFabricProcessConfig(source: NodeJS.ProcessEnv = process.env): FabricProcessConfig {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  const settings = problems.take(() => readFabricConfig(source));
  const nats = problems.take(() =>
    readEnv({ NATS_URL: env.url(urlSchemes.nats), ZITI_BUS_NAMESPACE: env.token('') }, source),
  );
  const redis = problems.take(() => readRedisEnv(source));
  const health = problems.take(() => readEnv({ HEALTH_PORT: env.int(0, 0, 65535) }, source));
  problems.done();
  return {
    settings: settings!,
    nats: { url: nats!.NATS_URL, namespace: nats!.ZITI_BUS_NAMESPACE },
    redis: redis!,
    healthPort: health!.HEALTH_PORT,
  };
}
