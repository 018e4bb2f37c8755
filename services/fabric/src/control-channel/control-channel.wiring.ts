import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { Circuits } from '../circuits/circuits.domain.ts';
import type { RouterPeers } from '../links/router-peers.domain.ts';
import type { RouterConnections } from '../routers/router-connections.domain.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import type { Terminators } from '../terminators/terminators.domain.ts';
import { ControlListener, type ControlTls } from './control-listener.transport.ts';
import { RouterMessages } from './router-messages.transport.ts';

/** The version routers are told (the hello answer): the reference's, whose behaviour this controller speaks. */
export const controllerVersion = {
  version: 'v1.1.9',
  revision: 'ziti-edge-controller',
  buildDate: '2024-08-22 09:50:40',
  os: process.platform,
  arch: process.arch === 'x64' ? 'amd64' : process.arch,
};

/** The control port: TLS, framing and hello, each router's messages to the part that handles them. */
export function controlChannelWiring(
  deps: FabricWiringDeps,
  parts: {
    connections: RouterConnections;
    terminators: Terminators;
    circuits: Circuits;
    apiSessions: ApiSessionSync;
    peers: RouterPeers;
  },
) {
  const { config, logger } = deps;
  const messages = new RouterMessages({
    terminators: parts.terminators,
    circuits: parts.circuits,
    apiSessions: parts.apiSessions,
    peers: parts.peers,
    logger,
  });
  let listener: ControlListener | undefined;
  return {
    listener: () => listener,
    /** Listens with this TLS identity; answers the port it listens on. */
    async start(identity: ControlTls): Promise<number> {
      listener = new ControlListener(
        { certChainPem: identity.certChainPem, keyPem: identity.keyPem, caBundlePem: identity.caBundlePem },
        parts.connections,
        messages,
        {
          bind: config.bind,
          port: config.port,
          limits: config.limits,
          version: controllerVersion,
          controllerId: config.advertisedAddress,
          maxConnections: config.maxConnections,
          handshakeTimeoutMs: config.limits.helloTimeoutMs,
        },
        logger,
      );
      return listener.start();
    },
    stop: async () => listener?.stop(),
  };
}
