import type { OperationHandlers } from '@ziti/platform';

/** The operations this service implements, keyed `<api>.<operationId>`; the rest answer 501. */
export function authOperations(_deps: Record<string, unknown> = {}): OperationHandlers {
  return {};
}
