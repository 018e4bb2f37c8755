import { type Server, type Socket, connect, createServer } from 'node:net';

/**
 * A TCP load balancer on 127.0.0.1 for tests, as a Kubernetes Service or an L4 load balancer stands
 * in front of a service's replicas: each connection goes to the first backend that accepts it, in
 * turn (round robin over the live ones); bytes pass through untouched (TLS is not terminated).
 */
export interface TcpBalancer {
  port: number;
  /** Which backend port each connection went to, in order of arrival. */
  readonly connections: { backend: number; at: number }[];
  /** The backend port of the connections open now. */
  open(): number[];
  close(): Promise<void>;
}

export async function startTcpBalancer(backends: () => number[]): Promise<TcpBalancer> {
  const connections: { backend: number; at: number }[] = [];
  const live = new Map<Socket, number>();
  let next = 0;
  const tryConnect = (client: Socket, candidates: number[], attempt: number): void => {
    if (attempt >= candidates.length) {
      client.destroy();
      return;
    }
    const port = candidates[(next + attempt) % candidates.length]!;
    const upstream = connect({ host: '127.0.0.1', port });
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      next++;
      connections.push({ backend: port, at: Date.now() });
      live.set(client, port);
      upstream.once('close', () => client.destroy());
      client.once('close', () => {
        live.delete(client);
        upstream.destroy();
      });
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on('error', () => {
      upstream.destroy();
      // Refused (the replica is down): the next one; once connected, the client goes with it.
      if (!connected) tryConnect(client, candidates, attempt + 1);
    });
  };
  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    client.on('error', () => client.destroy());
    tryConnect(client, backends(), 0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections,
    open: () => [...live.values()],
    close: async () => {
      for (const c of live.keys()) c.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
