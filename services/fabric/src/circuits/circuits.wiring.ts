import { type Served, serveCalls } from '@ziti/platform';
import type { ApiSessionSync } from '../api-sessions/api-session-sync.domain.ts';
import type { LinkGraph } from '../links/links.domain.ts';
import type { HeldLinks } from '../routers/router-link.ports.ts';
import type { FabricWiringDeps } from '../shared/fabric-deps.wiring.ts';
import type { terminatorsWiring } from '../terminators/terminators.wiring.ts';
import { Circuits } from './circuits.domain.ts';
import { circuitCalls } from './circuits.transport.ts';
import { DynamicCosts } from './terminator-selection.domain.ts';

/**
 * Circuits (dials routed over the routers this replica holds, kept in the shared circuit store), the
 * terminators' dynamic costs, and the calls that read both (served from `start`).
 */
export function circuitsWiring(
  deps: FabricWiringDeps,
  parts: {
    apiSessions: ApiSessionSync;
    terminators: ReturnType<typeof terminatorsWiring>;
    graph: LinkGraph;
    held: HeldLinks;
  },
) {
  const costs = new DynamicCosts();
  const circuits = new Circuits(
    parts.terminators.sessions,
    parts.terminators.owner,
    parts.apiSessions,
    (routerId) => parts.held.of(routerId),
    parts.graph,
    (routerId) => parts.held.node(routerId),
    deps.circuits,
    costs,
    { replicaId: deps.replicaId, routeTimeoutMs: deps.config.routeTimeoutMs, attempts: 3 },
    deps.logger,
  );
  let served: Served | undefined;
  let credit: NodeJS.Timeout | undefined;
  return {
    circuits,
    start() {
      served = serveCalls(deps.bus, 'fabric', circuitCalls(circuits, costs));
      // A terminator's dial failures weigh less as time passes.
      credit = setInterval(() => costs.creditOverTime(), 60_000);
      credit.unref();
    },
    async stop() {
      if (credit) clearInterval(credit);
      await served?.drain();
      await deps.circuits.close();
    },
  };
}
