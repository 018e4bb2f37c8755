import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { RunnableService } from './service-host.ts';

export interface HttpDrainOptions {
  /** Longest wait for the requests in flight (the gateway's request budget is 10 s). */
  timeoutMs?: number;
  /**
   * How long a kept-alive connection may stay idle after the last request in flight before it is
   * closed: a request a client sent on it just before it learned of the stop is still answered.
   */
  idleGraceMs?: number;
}

interface RequestStart {
  server: Server;
  response: ServerResponse;
}

/**
 * Wraps an HTTP(S) service so that stopping it drains its listener gracefully under keep-alive
 * traffic: stop accepting connections, answer every request in flight and every request that
 * arrives on an open connection with `Connection: close` (the client then opens no new request
 * on it), close the connections left idle, and only then run the service's own stop. Without it
 * a busy kept-alive connection is served for as long as the client keeps sending.
 *
 * The server is recognised by its port, from the requests it serves (Node's
 * `http.server.request.start` diagnostics channel), so the composition needs no access to it.
 */
export function drainHttpOnStop<S extends RunnableService & { port(): number }>(
  service: S,
  options: HttpDrainOptions = {},
): S {
  const servers = new Set<Server>();
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  const onRequest = (message: unknown) => {
    const { server, response } = message as RequestStart;
    if (!servers.has(server)) {
      const address = server.address();
      if (typeof address !== 'object' || address?.port !== service.port()) return;
      servers.add(server);
    }
    if (draining) response.setHeader('connection', 'close');
    inFlight.add(response);
    response.once('close', () => inFlight.delete(response));
  };
  subscribe('http.server.request.start', onRequest);

  const until = async (done: () => boolean | Promise<boolean>, deadline: number) => {
    while (!(await done()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  };
  const connections = (server: Server) =>
    new Promise<number>((resolve) => server.getConnections((err, count) => resolve(err ? 0 : count)));

  const drain = async () => {
    draining = true;
    const deadline = Date.now() + (options.timeoutMs ?? 10_000);
    const grace = options.idleGraceMs ?? 250;
    for (const server of servers) {
      // Stop accepting, leaving open connections alone (http's `close()` would also drop idle
      // ones at once, under a request a client may be sending on it right now).
      if (server.listening) NetServer.prototype.close.call(server);
    }
    for (const response of inFlight) if (!response.headersSent) response.setHeader('connection', 'close');
    for (const server of servers) {
      while (Date.now() < deadline && (await connections(server)) > 0) {
        await until(() => inFlight.size === 0, deadline);
        // Requests sent on a kept-alive connection before its client saw a `Connection: close`
        // arrive within the grace; they are answered (and close their connection) too.
        await new Promise((r) => setTimeout(r, grace));
        if (inFlight.size === 0) server.closeIdleConnections();
      }
      // Past the deadline nothing more is waited for: the process is expected to exit.
      server.closeAllConnections();
    }
  };

  return {
    ...service,
    stop: async () => {
      try {
        await drain();
      } finally {
        unsubscribe('http.server.request.start', onRequest);
        await service.stop();
      }
    },
  };
}
