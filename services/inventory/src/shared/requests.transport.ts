import type { OperationRequest } from '@ziti/contracts';

/** The `{id}` of an operation's path. */
export const id = (req: OperationRequest) => req.params.id ?? '';

/** A request whose body decodes to `B` (each of the operations a shared handler serves). */
export type WithBody<B> = OperationRequest & { body: B };
