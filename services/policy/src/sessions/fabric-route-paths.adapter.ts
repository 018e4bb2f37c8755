import { ApiError, fabricCallContracts } from '@ziti/contracts';
import { type Bus, callService } from '@ziti/platform';
import type { CircuitPaths } from './sessions.ports.ts';

/**
 * The router edge's circuits, asked of fabric (`fabric.routePaths`). No fabric replica answering
 * (SERVICE_UNAVAILABLE: none deployed, or none up) is "no router edge", which the domain reads as no
 * circuit; every other failure (TIMEOUT included) stays an error.
 */
export class FabricCircuitPaths implements CircuitPaths {
  constructor(private readonly bus: Bus) {}

  async routePaths(sessionIds: string[]): Promise<Record<string, string[]> | undefined> {
    try {
      return (await callService(this.bus, 'fabric', fabricCallContracts.routePaths, { sessionIds })).paths;
    } catch (err) {
      if (err instanceof ApiError && err.code === 'SERVICE_UNAVAILABLE') return undefined;
      throw err;
    }
  }
}
