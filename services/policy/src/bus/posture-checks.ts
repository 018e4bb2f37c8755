import { type OperationHandlersPart, listInputOf, pageReply, reply, roleFilterOf } from '@ziti/platform';
import type {
  PostureCheck,
  PostureCheckService,
  PostureCheckSpec,
  PostureCheckType,
} from '../domain/posture-checks.ts';
import { pathId } from './related-details.ts';

const self = (collection: string, id: string) => ({ self: { href: `./${collection}/${id}` } });

/** The type fields as the spec's posture check details show them (ziti `posture_check_api_model.go`). */
function typeFieldsOf(spec: PostureCheckSpec): Record<string, unknown> {
  switch (spec.typeId) {
    case 'OS':
      return { operatingSystems: spec.operatingSystems };
    case 'MAC':
      return { macAddresses: spec.macAddresses };
    case 'DOMAIN':
      return { domains: spec.domains };
    case 'PROCESS': {
      const { signerFingerprint, ...process } = spec.process;
      return { process: { ...process, ...(signerFingerprint ? { signerFingerprint } : {}) } };
    }
    case 'PROCESS_MULTI':
      return { semantic: spec.semantic, processes: spec.processes };
    case 'MFA':
      return {
        timeoutSeconds: spec.timeoutSeconds,
        promptOnWake: spec.promptOnWake,
        promptOnUnlock: spec.promptOnUnlock,
        ignoreLegacyEndpoints: spec.ignoreLegacyEndpoints,
      };
  }
}

/** A `postureCheckDetail` of the spec (discriminator `typeId`). */
export function postureCheckDetail(c: PostureCheck) {
  return {
    id: c.id,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
    tags: c.tags,
    _links: self('posture-checks', c.id),
    name: c.name,
    typeId: c.spec.typeId,
    version: c.version,
    roleAttributes: c.roleAttributes,
    ...typeFieldsOf(c.spec),
  };
}

/** A `postureCheckTypeDetail`; `version` is never filled by the reference (an empty string here). */
export function postureCheckTypeDetail(t: PostureCheckType) {
  return {
    id: t.id,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
    tags: t.tags,
    _links: self('posture-check-types', t.id),
    name: t.name,
    operatingSystems: t.operatingSystems,
    version: '',
  };
}

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
    'management.detailPostureCheck': async (req) => reply.ok(postureCheckDetail(await checks().get(pathId(req)))),
    'management.updatePostureCheck': async (req) => {
      await checks().update(pathId(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchPostureCheck': async (req) => {
      await checks().update(pathId(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deletePostureCheck': async (req) => {
      await checks().delete(pathId(req));
      return reply.empty();
    },
    'management.listPostureCheckTypes': async (req) =>
      pageReply(await checks().listTypes(listInputOf(req)), postureCheckTypeDetail),
    'management.detailPostureCheckType': async (req) =>
      reply.ok(postureCheckTypeDetail(await checks().getType(pathId(req)))),
    'management.listPostureCheckRoleAttributes': async (req) => {
      const { filter } = listInputOf(req);
      const page = await checks().roleAttributes(filter === undefined ? {} : { filter });
      // As the reference: no `filterableFields` on role-attribute lists.
      return pageReply({ ...page, filterableFields: [] });
    },
  } satisfies OperationHandlersPart<'policy'>;
}
