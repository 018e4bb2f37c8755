import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlersPart, callerOf, pathIdOf, reply } from '@ziti/platform';
import type { PostureCaller } from './posture-evaluation.ports.ts';
import type { PostureDataService } from './posture-data.domain.ts';
import { promptedServices } from './posture-responses.mapper.ts';

/** The caller's identity and API session; the gateway lets no anonymous caller reach these. */
function postureCallerOf(req: OperationRequest): PostureCaller {
  const { identityId, apiSessionId } = callerOf(req);
  return { identityId, apiSessionId };
}

/**
 * Client `POST /posture-response` (201) and `/posture-response-bulk` (200), any authenticated
 * caller; management `GET /identities/{id}/posture-data` (administrators).
 */
export function postureResponseOperations(data: () => PostureDataService) {
  return {
    'client.createPostureResponse': async (req) =>
      reply.ok(promptedServices(await data().respond(postureCallerOf(req), [req.body])), 201),
    'client.createPostureResponseBulk': async (req) =>
      reply.ok(promptedServices(await data().respond(postureCallerOf(req), req.body))),
    'management.getIdentityPostureData': async (req) => reply.ok(await data().postureData(pathIdOf(req))),
  } satisfies OperationHandlersPart<'policy'>;
}
