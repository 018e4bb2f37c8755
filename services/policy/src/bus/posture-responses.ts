import { ApiError, type OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, reply } from '@ziti/platform';
import type { PostureCaller } from '../domain/posture-ports.ts';
import { type PostureDataService, type PromptedService, mfaPromptGraceSeconds } from '../domain/posture-data.ts';
import { pathId } from './related-details.ts';

/** The caller's identity and API session; the gateway lets no anonymous caller reach these. */
function postureCallerOf(req: OperationRequest): PostureCaller {
  if (!req.caller) throw new ApiError('UNAUTHORIZED');
  return { identityId: req.caller.identityId, apiSessionId: req.caller.apiSessionId };
}

/** `postureResponse.services`: the services a wake or unlock report now prompts MFA for. */
const services = (list: PromptedService[]) => ({
  services: list.map((s) => ({
    id: s.id,
    name: s.name,
    postureQueryType: 'MFA',
    timeout: s.timeout,
    timeoutRemaining: mfaPromptGraceSeconds,
  })),
});

/**
 * Client `POST /posture-response` (201) and `/posture-response-bulk` (200), any authenticated
 * caller; management `GET /identities/{id}/posture-data` (administrators).
 */
export function postureResponseOperations(data: () => PostureDataService) {
  return {
    'client.createPostureResponse': async (req) =>
      reply.ok(services(await data().respond(postureCallerOf(req), [req.body])), 201),
    'client.createPostureResponseBulk': async (req) =>
      reply.ok(services(await data().respond(postureCallerOf(req), req.body))),
    'management.getIdentityPostureData': async (req) => reply.ok(await data().postureData(pathId(req))),
  } satisfies OperationHandlersPart<'policy'>;
}
