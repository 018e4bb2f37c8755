import type { Bus, Logger } from '@ziti/platform';
import type { CircuitStore } from '../circuits/circuits.ports.ts';
import type { FabricConfig } from '../config.ts';

/** What every fabric wiring is built from: the service's settings and shared clients. */
export interface FabricWiringDeps {
  config: FabricConfig;
  bus: Bus;
  logger: Logger;
  circuits: CircuitStore;
  /** This replica's id (circuits and router presence name it). */
  replicaId: string;
}
