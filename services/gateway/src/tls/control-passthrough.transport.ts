import type { Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from '@ziti/platform';

/** The application protocol routers offer for the control channel (ROUTER-FACTS §1). */
export const controlAlpn = 'ziti-ctrl';

/**
 * Takes a router's TLS connection that asked the API port for the control channel: the handshake
 * is done with the controller's certificate and CA (the same as the control port's), so the router
 * edge reads its client certificate and admits it as on its own port.
 */
export type ControlChannelHandoff = (socket: TLSSocket) => void;

/**
 * The ALPN choice of the API port when it also takes routers: `ziti-ctrl` when offered, else
 * `http/1.1`; a client that offers neither gets its first choice, as it would have got no
 * protocol from a server without ALPN and talked HTTP/1.1 regardless.
 */
export function apiPortAlpn({ protocols }: { protocols: string[] }): string {
  if (protocols.includes(controlAlpn)) return controlAlpn;
  if (protocols.includes('http/1.1')) return 'http/1.1';
  return protocols[0]!;
}

/**
 * The API port also takes routers, as the reference's quickstart does (`npm start`): once TLS is
 * done, a connection that negotiated `ziti-ctrl` goes to the router edge in this process instead of
 * the HTTP parser. Every other connection is the HTTPS server's as before.
 */
export function handControlChannelOver(
  server: Server,
  handoff: ControlChannelHandoff,
  logger: Logger,
): { closeAll(): void } {
  const handed = new Set<TLSSocket>();
  const httpListeners = server.listeners('secureConnection') as ((socket: TLSSocket) => void)[];
  server.removeAllListeners('secureConnection');
  server.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol !== controlAlpn) {
      for (const l of httpListeners) l.call(server, socket);
      return;
    }
    handed.add(socket);
    socket.once('close', () => handed.delete(socket));
    try {
      handoff(socket);
    } catch (err) {
      logger.warn({ err }, 'a control-channel connection could not be handed over');
      socket.destroy();
    }
  });
  return {
    closeAll() {
      for (const s of handed) s.destroy();
      handed.clear();
    },
  };
}
