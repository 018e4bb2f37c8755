import { fabricCallContracts } from '@ziti/contracts';
import { type CallTable, callHandlers } from '@ziti/platform';
import type { Circuits } from './circuits.domain.ts';

/** The call fabric serves: the routers of sessions' live circuits (policy's `/sessions/{id}/route-path`). */
export function circuitCalls(circuits: Circuits): CallTable {
  const { routePaths } = fabricCallContracts;
  return callHandlers(
    { routePaths },
    { routePaths: async ({ sessionIds }) => ({ paths: await circuits.routePaths(sessionIds) }) },
  );
}
