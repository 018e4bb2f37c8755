import { circuitStoreContract } from '../../test/circuit-store-contract.ts';
import { MemoryCircuitStore } from './memory-circuit.store.ts';

/** The circuits of `npm start`'s one process, held to the same contract as the Redis store. */
circuitStoreContract('memory', () => {
  const store = new MemoryCircuitStore();
  const internals = store as unknown as {
    circuits: Map<string, unknown>;
    bySession: Map<string, Set<string>>;
    byRouter: Map<string, Set<string>>;
  };
  return {
    store,
    another: () => store,
    leftovers: async () => [
      ...[...internals.circuits.keys()].map((id) => `circuit ${id}`),
      ...[...internals.bySession.keys()].map((s) => `session index ${s}`),
      ...[...internals.byRouter.keys()].map((r) => `router index ${r}`),
    ],
  };
});
