import { type OperationHandlers, reply } from '@ziti/platform';
import { idOf } from '../shared/requests.transport.ts';
import type { IdentityTraceService } from './identity-traces.domain.ts';
import { traceDetail } from './identity-traces.mapper.ts';

export interface IdentityTraceOperationDeps {
  traces: IdentityTraceService;
}

/** An identity's tracing (management). */
export function identityTraceOperations(deps: IdentityTraceOperationDeps) {
  return {
    'management.updateIdentityTracing': async (req) =>
      reply.ok(traceDetail(await deps.traces.set(idOf(req), req.body))),
  } satisfies Partial<OperationHandlers<'auth'>>;
}
