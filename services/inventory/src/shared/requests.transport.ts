import type { OperationRequest } from '@ziti/contracts';

/** A request whose body decodes to `B` (each of the operations a shared handler serves). */
export type WithBody<B> = OperationRequest & { body: B };
