import { describe, expect, it } from 'vitest';
import { operations } from '@ziti/contracts';
import { auditOperationBindings } from '../../services/audit/src/operation-bindings.transport.ts';
import { authOperationBindings } from '../../services/auth/src/operation-bindings.transport.ts';
import { inventoryOperationBindings } from '../../services/inventory/src/operation-bindings.transport.ts';
import { pkiEnrollmentOperationBindings } from '../../services/pki-enrollment/src/operation-bindings.transport.ts';
import { policyOperationBindings } from '../../services/policy/src/operation-bindings.transport.ts';
import { staleBindings } from '../../tools/generate-operation-bindings.ts';

/**
 * Each service's generated operation bindings (bus subject → route → transport slice) are current,
 * cover every operation of their owner, and name the slice that really holds the handler.
 */
const bindings = {
  audit: auditOperationBindings,
  auth: authOperationBindings,
  inventory: inventoryOperationBindings,
  'pki-enrollment': pkiEnrollmentOperationBindings,
  policy: policyOperationBindings,
};

/** Stand-in dependencies: every property and call answers itself, so a slice builds its table. */
const anything: unknown = new Proxy(() => undefined, {
  get: (_, key) => (key === 'then' ? undefined : anything),
  apply: () => anything,
});

describe('operation bindings (tools/generate-operation-bindings.ts)', () => {
  it('are what `npm run generate` writes now', async () => {
    expect(await staleBindings()).toEqual([]);
  }, 60_000);

  it.each(Object.entries(bindings))(
    "%s: one per operation it owns, each on the owner's subject, in the slice that handles it",
    (owner, table) => {
      const own = operations.filter((o) => o.owner === owner).map((o) => `${o.api}.${o.operationId}`);
      expect(Object.keys(table).sort()).toEqual([...own].sort());
      for (const [key, binding] of Object.entries(table)) {
        expect(binding.subject).toBe(`ziti.rpc.${owner}.op.${key}`);
        const handlers = (binding.slice as (deps: unknown) => Record<string, unknown>)(anything);
        expect(Object.keys(handlers), `${key} in ${(binding.slice as { name: string }).name}`).toContain(key);
      }
    },
  );
});
