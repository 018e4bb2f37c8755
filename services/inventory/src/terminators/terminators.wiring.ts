import type { InventoryCore } from '../shared/core.wiring.ts';
import { FabricTerminatorDynamicCosts } from './terminator-dynamic-costs.adapter.ts';
import { TerminatorService } from './terminators.domain.ts';

/** Terminators: read on the pool on the dial path, their dynamic costs from fabric's strategies. */
export const terminatorsWiring = (core: InventoryCore) =>
  new TerminatorService(core.work, undefined, core.reader, new FabricTerminatorDynamicCosts(core.bus, core.logger));
