import { existsSync } from 'node:fs';
import { Socket } from 'node:net';

/**
 * Finds the infrastructure the integration and end-to-end tests run on. A URL given in the
 * environment wins (TEST_POSTGRES_URL, TEST_REDIS_URL, TEST_NATS_URL); otherwise the machine's own
 * service on its loopback default port; only when that does not answer and a Docker engine exists
 * is a container started with testcontainers (and stopped after the run).
 */
const services = [
  {
    env: 'TEST_POSTGRES_URL',
    port: 5432,
    url: (host: string, port: number) => `postgres://postgres@${host}:${port}/postgres`,
  },
  { env: 'TEST_REDIS_URL', port: 6379, url: (host: string, port: number) => `redis://${host}:${port}` },
  { env: 'TEST_NATS_URL', port: 4222, url: (host: string, port: number) => `nats://${host}:${port}` },
] as const;

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.connect(port, '127.0.0.1', () => done(true));
  });
}

function dockerEngineExists(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

export default async function setup(): Promise<() => Promise<void>> {
  const stops: (() => Promise<unknown>)[] = [];
  for (const service of services) {
    if (process.env[service.env]) continue;
    if (await answers(service.port)) continue;
    if (!dockerEngineExists()) {
      throw new Error(
        `nothing answers on 127.0.0.1:${service.port}, ${service.env} is not set and there is no Docker engine: start the service or set ${service.env}`,
      );
    }
    const { GenericContainer, Wait } = await import('testcontainers');
    const image = { TEST_POSTGRES_URL: 'postgres:15', TEST_REDIS_URL: 'redis:7', TEST_NATS_URL: 'nats:2.9' }[
      service.env
    ];
    let container = new GenericContainer(image).withExposedPorts(service.port);
    if (service.env === 'TEST_POSTGRES_URL') {
      container = container
        .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
        .withWaitStrategy(Wait.forListeningPorts());
    }
    if (service.env === 'TEST_NATS_URL') container = container.withCommand(['-js']);
    const started = await container.start();
    stops.push(() => started.stop());
    process.env[service.env] = service.url(started.getHost(), started.getMappedPort(service.port));
  }
  return async () => {
    await Promise.all(stops.map((stop) => stop()));
  };
}
