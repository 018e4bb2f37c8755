import { randomBytes } from 'node:crypto';
import type { Bus, Logger, RunnableService } from '@ziti/platform';
import { fetchServerIdentity, watchRouterEdge } from '@ziti/platform';
import { apiSessionsWiring } from './api-sessions/api-sessions.wiring.ts';
import type { CircuitStore } from './circuits/circuits.ports.ts';
import { circuitsWiring } from './circuits/circuits.wiring.ts';
import type { FabricConfig } from './config.ts';
import { controlChannelWiring } from './control-channel/control-channel.wiring.ts';
import type { ControlListener, ControlTls } from './control-channel/control-listener.transport.ts';
import type { RouterConnections } from './routers/router-connections.domain.ts';
import type { HeldLinks } from './routers/router-link.ports.ts';
import { routersWiring } from './routers/routers.wiring.ts';
import { linkCosts } from './links/links.domain.ts';
import { linksWiring } from './links/links.wiring.ts';
import type { FabricWiringDeps } from './shared/fabric-deps.wiring.ts';
import { terminatorsWiring } from './terminators/terminators.wiring.ts';

export interface FabricServiceDeps {
  config: FabricConfig;
  bus: Bus;
  circuits: CircuitStore;
  logger: Logger;
  /** Closes the bus on stop (false when it is shared, as under `npm start`). */
  ownsBus?: boolean;
  /** The TLS identity; fetched from pki-enrollment when absent (as the gateway does). */
  tls?: ControlTls;
  /** Told the control port once it listens (`npm start` prints it). */
  onListening?: (port: number) => void;
}

export type FabricService = RunnableService & {
  /** The control port it listens on (after start). */
  port(): number;
  connections: RouterConnections;
  /** Takes a TLS connection another listener accepted for `ziti-ctrl` (the API port's ALPN). */
  listener(): ControlListener | undefined;
};

/**
 * Composition root of the router edge (docs/adr/0023): the control port, the routers it holds, the
 * edge state they carry (API sessions, terminators, circuits), and the owners it asks over the bus.
 */
export function createFabricService(deps: FabricServiceDeps): FabricService {
  const { config, bus, logger } = deps;
  const wiring: FabricWiringDeps = {
    config,
    bus,
    logger,
    circuits: deps.circuits,
    replicaId: `fabric-${randomBytes(6).toString('hex')}`,
  };
  // The parts that instruct routers find their links through `routers`, built after them (it needs
  // them); nothing looks a link up before a router connects.
  const held: HeldLinks = {
    of: (routerId) => routers.get(routerId)?.link ?? links.remote(routerId),
    local: (routerId) => routers.get(routerId)?.link,
    peers: () => routers.peers(),
    edge: () => routers.edgeLinks(),
    node: (routerId) => {
      const h = routers.get(routerId);
      if (h) return h.syncStatus === 'SYNC_DONE' && !h.link.closed ? h.router : undefined;
      return links.fleet.router(routerId);
    },
  };
  const links = linksWiring(wiring, held);
  const { apiSessions, follower: followerOf } = apiSessionsWiring(wiring, held);
  const terminators = terminatorsWiring(wiring, apiSessions);
  const circuits = circuitsWiring(wiring, { apiSessions, terminators, graph: links.graph, held });
  const { peers, follower: fleet } = links.peers(circuits.circuits);
  const routers = routersWiring(wiring, {
    apiSessions,
    terminators: terminators.terminators,
    circuits: circuits.circuits,
    peers,
    held,
  });
  const follower = followerOf(routers);
  const control = controlChannelWiring(wiring, {
    connections: routers,
    terminators: terminators.terminators,
    circuits: circuits.circuits,
    apiSessions,
    peers,
  });
  let port = config.port;
  let unwatch: (() => void) | undefined;
  let started = false;
  return {
    name: 'fabric',
    connections: routers,
    port: () => port,
    listener: control.listener,
    async start() {
      const identity = deps.tls ?? (await fetchServerIdentity(bus, logger));
      // Followed before any router is let in, so no change concerning it is missed.
      await follower.start();
      circuits.start();
      fleet.start();
      port = await control.start(identity);
      routers.startLeaseRenewal();
      unwatch = watchRouterEdge({
        connectedRouters: () => routers.list().length,
        channels: () => control.listener()?.channels ?? 0,
        apiSessions: () => apiSessions.size,
        links: () => links.graph.size,
        measuredLinks: () =>
          links.graph
            .list()
            .filter(
              (l) => l.srcLatencyMs !== linkCosts.initialLatencyMs || l.dstLatencyMs !== linkCosts.initialLatencyMs,
            ).length,
      });
      started = true;
      logger.info(
        { port, advertised: config.advertisedAddress, replicaId: wiring.replicaId },
        'control channel listening',
      );
      deps.onListening?.(port);
    },
    async ready() {
      return started;
    },
    async stop() {
      started = false;
      unwatch?.();
      // Routers first learn that this replica goes (so their circuits are kept), then the port closes.
      await routers.stop('the controller is stopping');
      await control.stop();
      await fleet.stop();
      await follower.stop();
      await circuits.stop();
      if (deps.ownsBus !== false) await bus.close();
    },
  };
}
