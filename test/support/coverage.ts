import { type Owner, operations } from '@ziti/contracts';
import { auditOperations } from '../../services/audit/src/operations.transport.ts';
import { authOperations } from '../../services/auth/src/operations.transport.ts';
import { inventoryOperations } from '../../services/inventory/src/operations.transport.ts';
import { pkiOperations, routerEnrollmentOperations } from '../../services/pki-enrollment/src/operations.transport.ts';
import { policyOperations } from '../../services/policy/src/operations.transport.ts';
import { type OperationHandlers, notImplemented } from '@ziti/platform';

/**
 * Each service's operation table, built from its factories with inert dependencies: building a
 * table only creates closures, it calls nothing.
 */
export function operationTables(): Record<Exclude<Owner, 'gateway'>, OperationHandlers> {
  const inert = new Proxy({}, { get: () => () => undefined }) as never;
  return {
    auth: authOperations(inert),
    'pki-enrollment': { ...pkiOperations(inert), ...routerEnrollmentOperations(inert, inert) },
    policy: policyOperations(inert),
    inventory: inventoryOperations(inert),
    audit: auditOperations(inert),
  };
}

/** The operations each service has a handler for (not those it lists as `notImplemented`). */
export function implementedOperationKeys(): Set<string> {
  const keys = new Set<string>();
  for (const table of Object.values(operationTables())) {
    for (const [key, handler] of Object.entries(table)) if (handler !== notImplemented) keys.add(key);
  }
  for (const op of operations) if (op.owner === 'gateway') keys.add(`${op.api}.${op.operationId}`);
  return keys;
}
