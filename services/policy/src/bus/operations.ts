import type { OperationHandlers } from '@ziti/platform';

/** The operations this service implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function policyOperations(_deps: Record<string, unknown> = {}): OperationHandlers {
  return {};
}
