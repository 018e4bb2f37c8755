import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, listInputOf, pageReply } from '@ziti/platform';
import type { ControllerService } from './controllers.domain.ts';
import { controllerDetail } from './controllers.mapper.ts';

export interface ControllerOperationDeps {
  controllers: ControllerService;
}

/** `/controllers` (both APIs). */
export function controllerOperations(deps: ControllerOperationDeps) {
  const listControllers = async (req: OperationRequest) =>
    pageReply(await deps.controllers.list(listInputOf(req)), controllerDetail);
  return {
    'client.listControllers': listControllers,
    'management.listControllers': listControllers,
  } satisfies Partial<OperationHandlers<'auth'>>;
}
