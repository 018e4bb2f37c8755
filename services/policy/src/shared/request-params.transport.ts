import type { OperationRequest } from '@ziti/contracts';
import { listInputOf } from '@ziti/platform';
import type { ListInput } from '@ziti/platform/list-page';

/** The `{id}` of an operation's path (empty when absent). */
export const pathId = (req: OperationRequest) => req.params.id ?? '';
export const listInput = (req: OperationRequest): ListInput => listInputOf(req);
