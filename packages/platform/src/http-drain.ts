import type { Server, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { Server as NetServer } from 'node:net';

export interface HttpDrainOptions {
  /** Longest wait for the requests in flight (the gateway's request budget is 10 s). */
  timeoutMs?: number;
  /**
   * How long a kept-alive connection may stay idle after the last request in flight before it is
   * closed: a request a client sent on it just before it learned of the stop is still answered.
   */
  idleGraceMs?: number;
}

/**
 * Tracks an HTTP(S) server's requests so that `drain()` can stop it gracefully under keep-alive
 * traffic: stop accepting connections, answer every request in flight and every request that
 * arrives on an open connection with `Connection: close` (the client then opens no new request
 * on it), close the connections left idle, and return. Without it a busy kept-alive connection is
 * served for as long as the client keeps sending. Call it before the server starts listening.
 */
export function httpDrain(server: Server | HttpsServer, options: HttpDrainOptions = {}): { drain(): Promise<void> } {
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  server.prependListener('request', (_req: unknown, response: ServerResponse) => {
    if (draining) response.setHeader('connection', 'close');
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
  });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const connections = () =>
    new Promise<number>((resolve) => server.getConnections((err, count) => resolve(err ? 0 : count)));

  return {
    async drain() {
      draining = true;
      const deadline = Date.now() + (options.timeoutMs ?? 10_000);
      const grace = options.idleGraceMs ?? 250;
      // Stop accepting, leaving open connections alone (http's `close()` would also drop idle
      // ones at once, under a request a client may be sending on it right now).
      if (server.listening) NetServer.prototype.close.call(server);
      for (const response of inFlight) if (!response.headersSent) response.setHeader('connection', 'close');
      while (Date.now() < deadline && (await connections()) > 0) {
        while (inFlight.size > 0 && Date.now() < deadline) await pause(20);
        // Requests sent on a kept-alive connection before its client saw a `Connection: close`
        // arrive within the grace; they are answered (and close their connection) too.
        await pause(grace);
        if (inFlight.size === 0) server.closeIdleConnections();
      }
      // Past the deadline nothing more is waited for: the process is expected to exit.
      server.closeAllConnections();
    },
  };
}
