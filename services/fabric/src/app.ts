import { randomBytes } from 'node:crypto';
import type { Bus, Logger, RunnableService, Served } from '@ziti/platform';
import { fetchServerIdentity, serveCalls, watchRouterEdge } from '@ziti/platform';
import { BusApiSessionSource } from './api-sessions/api-sessions.adapter.ts';
import { ApiSessionSync } from './api-sessions/api-session-sync.domain.ts';
import { EdgeStateFollower } from './api-sessions/edge-state-events.transport.ts';
import { Circuits } from './circuits/circuits.domain.ts';
import type { CircuitStore } from './circuits/circuits.ports.ts';
import { circuitCalls } from './circuits/circuits.transport.ts';
import { DynamicCosts } from './circuits/terminator-selection.domain.ts';
import type { FabricConfig } from './config.ts';
import { ControlListener, type ControlTls } from './control-channel/control-listener.transport.ts';
import { RouterMessages } from './control-channel/router-messages.transport.ts';
import { EdgeState } from './routers/edge-state.domain.ts';
import { RouterConnections } from './routers/router-connections.domain.ts';
import { BusRouterRegistry } from './routers/routers.adapter.ts';
import { BusSessionAuthority, BusTerminatorOwner } from './terminators/terminators.adapter.ts';
import { Terminators } from './terminators/terminators.domain.ts';

/** The version routers are told (the hello answer): the reference's, whose behaviour this controller speaks. */
export const controllerVersion = {
  version: 'v1.1.9',
  revision: 'ziti-edge-controller',
  buildDate: '2024-08-22 09:50:40',
  os: process.platform,
  arch: process.arch === 'x64' ? 'amd64' : process.arch,
};

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
  const replicaId = `fabric-${randomBytes(6).toString('hex')}`;
  const registry = new BusRouterRegistry(bus);
  const sessions = new BusSessionAuthority(bus);
  const owner = new BusTerminatorOwner(bus);
  const costs = new DynamicCosts();
  const apiSessions = new ApiSessionSync(new BusApiSessionSource(bus), () => connections.edgeLinks(), logger);
  const terminators = new Terminators(sessions, owner, apiSessions, logger);
  const circuits = new Circuits(
    sessions,
    owner,
    apiSessions,
    (routerId) => connections.get(routerId)?.link,
    deps.circuits,
    costs,
    { replicaId, routeTimeoutMs: config.routeTimeoutMs, attempts: 3 },
    logger,
  );
  const edgeState = new EdgeState(
    apiSessions,
    terminators,
    circuits,
    (link) => connections.get(link.routerId)?.link === link,
    logger,
  );
  const connections: RouterConnections = new RouterConnections(
    registry,
    edgeState,
    { replicaId, leaseMs: config.leaseMs, helloTimeoutMs: config.limits.helloTimeoutMs },
    logger,
  );
  const follower = new EdgeStateFollower(bus, apiSessions, connections, logger);
  const messages = new RouterMessages({ terminators, circuits, apiSessions, logger });
  let listener: ControlListener | undefined;
  let port = config.port;
  let served: Served | undefined;
  let credit: NodeJS.Timeout | undefined;
  let unwatch: (() => void) | undefined;
  let started = false;
  return {
    name: 'fabric',
    connections,
    port: () => port,
    listener: () => listener,
    async start() {
      const identity = deps.tls ?? (await fetchServerIdentity(bus, logger));
      // Followed before any router is let in, so no change concerning it is missed.
      await follower.start();
      served = serveCalls(bus, 'fabric', circuitCalls(circuits, costs));
      listener = new ControlListener(
        {
          certChainPem: identity.certChainPem,
          keyPem: identity.keyPem,
          caBundlePem: identity.caBundlePem,
        },
        connections,
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
      port = await listener.start();
      connections.startLeaseRenewal();
      unwatch = watchRouterEdge({
        connectedRouters: () => connections.list().length,
        channels: () => listener?.channels ?? 0,
        apiSessions: () => apiSessions.size,
      });
      credit = setInterval(() => costs.creditOverTime(), 60_000);
      credit.unref();
      started = true;
      logger.info({ port, advertised: config.advertisedAddress, replicaId }, 'control channel listening');
      deps.onListening?.(port);
    },
    async ready() {
      return started;
    },
    async stop() {
      started = false;
      if (credit) clearInterval(credit);
      unwatch?.();
      // Routers first learn that this replica goes (so their circuits are kept), then the port closes.
      await connections.stop('the controller is stopping');
      await listener?.stop();
      await served?.drain();
      await follower.stop();
      await deps.circuits.close();
      if (deps.ownsBus !== false) await bus.close();
    },
  };
}
