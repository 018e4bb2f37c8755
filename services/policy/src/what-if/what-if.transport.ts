import { type OperationHandlersPart, reply } from '@ziti/platform';
import { defaultWhatIfLimit } from './what-if-diff.domain.ts';
import type { WhatIfAnalysis } from './what-if.domain.ts';
import { proposedChangesOf, whatIfResultOf } from './what-if.mapper.ts';

/** `POST /extensions/what-if` (management, administrators): the difference proposed changes would make. */
export function whatIfOperations(analysis: () => WhatIfAnalysis) {
  return {
    'management.whatIfPolicyChange': async (req) => {
      const changes = proposedChangesOf(req.body.changes);
      const answer = await analysis().analyse(changes, req.body.limit ?? defaultWhatIfLimit);
      return reply.ok(whatIfResultOf(answer));
    },
  } satisfies OperationHandlersPart<'policy'>;
}
