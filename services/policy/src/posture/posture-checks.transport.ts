import { type OperationHandlersPart, listInputOf, pageReply, pathIdOf, reply, roleFilterOf } from '@ziti/platform';
import type { PostureCheckService } from './posture-checks.domain.ts';
import { postureCheckDetail, postureCheckTypeDetail } from './posture-checks.mapper.ts';

/**
 * `/posture-checks` (list with roleFilter/roleSemantic, create, detail, PUT, PATCH, DELETE),
 * `/posture-check-types` and `/posture-check-role-attributes` (management, administrators).
 */
export function postureCheckOperations(checks: () => PostureCheckService) {
  return {
    'management.listPostureChecks': async (req) => {
      const roleFilter = roleFilterOf(req);
      return pageReply(await checks().list(listInputOf(req), roleFilter), postureCheckDetail);
    },
    'management.createPostureCheck': async (req) =>
      reply.created((await checks().create(req.body)).id, 'posture-checks'),
    'management.detailPostureCheck': async (req) => reply.ok(postureCheckDetail(await checks().get(pathIdOf(req)))),
    'management.updatePostureCheck': async (req) => {
      await checks().update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchPostureCheck': async (req) => {
      await checks().update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deletePostureCheck': async (req) => {
      await checks().delete(pathIdOf(req));
      return reply.empty();
    },
    'management.listPostureCheckTypes': async (req) =>
      pageReply(await checks().listTypes(listInputOf(req)), postureCheckTypeDetail),
    'management.detailPostureCheckType': async (req) =>
      reply.ok(postureCheckTypeDetail(await checks().getType(pathIdOf(req)))),
    'management.listPostureCheckRoleAttributes': async (req) => {
      const { filter } = listInputOf(req);
      const page = await checks().roleAttributes(filter === undefined ? {} : { filter });
      // As the reference: no `filterableFields` on role-attribute lists.
      return pageReply({ ...page, filterableFields: [] });
    },
  } satisfies OperationHandlersPart<'policy'>;
}
