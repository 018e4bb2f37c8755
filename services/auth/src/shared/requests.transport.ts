import type { OperationRequest } from '@ziti/contracts';

/** The `{id}` path parameter. */
export const idOf = (req: OperationRequest) => req.params.id ?? '';
