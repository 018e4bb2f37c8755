import { ApiError, type OperationRequest } from '@ziti/contracts';

/** The caller of an operation that needs one (an API session): UNAUTHORIZED without. */
export function callerOf(req: OperationRequest) {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return req.caller;
}

/** The `{id}` path parameter. */
export const idOf = (req: OperationRequest) => req.params.id ?? '';
