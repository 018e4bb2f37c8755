import { type OperationHandlers, pathIdOf, reply } from '@ziti/platform';
import type { IdentityTraceService } from './identity-traces.domain.ts';
import { traceDetail } from './identity-traces.mapper.ts';

export interface IdentityTraceOperationDeps {
  traces: IdentityTraceService;
}

/** An identity's tracing (management). */
export function identityTraceOperations(deps: IdentityTraceOperationDeps) {
  return {
    'management.updateIdentityTracing': async (req) =>
      reply.ok(traceDetail(await deps.traces.set(pathIdOf(req), req.body))),
  } satisfies Partial<OperationHandlers<'auth'>>;
}
