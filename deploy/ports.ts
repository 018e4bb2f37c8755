import { createServer } from 'node:net';

/**
 * Ports for the processes this project starts on 127.0.0.1 (the local cluster, tests, benchmarks).
 *
 * A port is chosen below Linux's default ephemeral range (32768–60999, which outgoing connections
 * take their local ports from: a port handed out by `listen(0)` is in it, and a connection to
 * Postgres, NATS or Redis opened before the process listens can take it) and checked free by
 * binding it; never the same one twice in a process. Where no such port is found (a tight
 * machine), the OS's own choice.
 */
const low = 20_000;
const high = 32_000;
const handedOut = new Set<number>();

function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/** A port free on 127.0.0.1 now, outside the ephemeral range when one is free there. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const candidate = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(candidate)) continue;
    if ((await bindable(candidate)) !== undefined) {
      handedOut.add(candidate);
      return candidate;
    }
  }
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await bindable(0);
    if (port !== undefined && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('freePort: no free port on 127.0.0.1');
}

/** Two consecutive free ports (`base` and `base + 1`), for replicas that listen on consecutive ports. */
export async function freePortPair(): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const base = low + Math.floor(Math.random() * (high - low - 1));
    if (handedOut.has(base) || handedOut.has(base + 1)) continue;
    if ((await bindable(base)) !== undefined && (await bindable(base + 1)) !== undefined) {
      handedOut.add(base).add(base + 1);
      return base;
    }
  }
  throw new Error('freePortPair: no two consecutive free ports on 127.0.0.1');
}
