import { operations } from '@ziti/contracts';
import { authOperations } from '@ziti/auth/bus/operations';
import { inventoryOperations } from '@ziti/inventory/bus/operations';
import { pkiOperations } from '@ziti/pki-enrollment/bus/operations';
import { routerEnrollmentOperations } from '@ziti/pki-enrollment/bus/router-enrollment';
import { policyOperations } from '@ziti/policy/bus/operations';

/**
 * The operations each service has a handler for. Handler maps are built from their factories
 * with inert dependencies: building a map only creates closures, it calls nothing.
 */
export function implementedOperationKeys(): Set<string> {
  const inert = new Proxy({}, { get: () => () => undefined }) as never;
  const keys = new Set<string>([
    ...Object.keys(authOperations(inert)),
    ...Object.keys(pkiOperations(inert)),
    ...Object.keys(routerEnrollmentOperations(inert, inert)),
    ...Object.keys(policyOperations(inert)),
    ...Object.keys(inventoryOperations(inert)),
  ]);
  for (const op of operations) if (op.owner === 'gateway') keys.add(`${op.api}.${op.operationId}`);
  return keys;
}
