import { fabricCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { Circuits } from './circuits.domain.ts';
import type { DynamicCosts } from './terminator-selection.domain.ts';

/**
 * The calls fabric serves: the routers of sessions' live circuits (policy's
 * `/sessions/{id}/route-path`), and the dynamic costs this replica holds of terminators
 * (inventory's terminator reads' `dynamicCost`).
 */
export function circuitCalls(circuits: Circuits, costs: DynamicCosts): CallTable {
  const { routePaths, terminatorDynamicCosts } = fabricCallContracts;
  return callHandlers(
    { routePaths, terminatorDynamicCosts },
    {
      routePaths: async ({ sessionIds }) => ({ paths: await circuits.routePaths(sessionIds) }),
      terminatorDynamicCosts: async ({ ids }) => ({ costs: Object.fromEntries(ids.map((id) => [id, costs.cost(id)])) }),
    },
  );
}
