import { type OperationRequest, listEnvelope } from '@ziti/contracts';
import { type OperationHandlers, listInputOf, reply } from '@ziti/platform';
import type { Policy, PolicyInput, PolicyService } from '../domain/policies.ts';
import { type RoleField, type RoleTarget, displayRoles, roleTargetOf } from '../domain/roles.ts';

type Links = Record<string, { href: string }>;
type RoleNames = Map<RoleTarget, Map<string, string>>;

/** The operation ids of one policy resource. */
export interface PolicyOperationIds {
  list: string;
  create: string;
  detail: string;
  update: string;
  patch: string;
  delete: string;
}

/** What a resource file says about its wire shape: collection, link keys and the kind's own fields. */
export interface PolicyResource {
  collection: string;
  /** Link keys besides `self`, each `./<collection>/<id>/<key>` (ZITI-FACTS §5.4). */
  linkKeys: readonly string[];
  operations: PolicyOperationIds;
  /** Fields of the kind beyond the common ones and the roles (`type`, `isSystem`). */
  extra: (p: Policy) => Record<string, unknown>;
}

const ts = (d: Date) => d.toISOString();

function linksOf(resource: PolicyResource, id: string): Links {
  const links: Links = { self: { href: `./${resource.collection}/${id}` } };
  for (const key of resource.linkKeys) links[key] = { href: `./${resource.collection}/${id}/${key}` };
  return links;
}

/** A policy detail: common fields, each role field with its `…RolesDisplay`, and the kind's own fields. */
export function policyDetail(resource: PolicyResource, fields: readonly RoleField[], p: Policy, names: RoleNames) {
  const roles: Record<string, unknown> = {};
  for (const field of fields) {
    const list = p.roles[field] ?? [];
    roles[field] = list;
    roles[`${field}Display`] = displayRoles(list, names.get(roleTargetOf[field]) ?? new Map());
  }
  return {
    id: p.id,
    createdAt: ts(p.createdAt),
    updatedAt: ts(p.updatedAt),
    tags: p.tags,
    _links: linksOf(resource, p.id),
    name: p.name,
    semantic: p.semantic,
    ...roles,
    ...resource.extra(p),
  };
}

const body = (req: OperationRequest) => (req.body ?? {}) as PolicyInput;
const id = (req: OperationRequest) => req.params.id ?? '';

/**
 * list/create/detail/update/patch/delete of one policy resource: parse, call the domain, map back.
 * `service` is read per request, so the operation keys exist before the service is wired.
 */
export function policyHandlers(resource: PolicyResource, service: () => PolicyService): OperationHandlers {
  const ops = resource.operations;
  const details = async (policies: PolicyService, list: Policy[]) => {
    const names = await policies.roleNames(list);
    return list.map((p) => policyDetail(resource, policies.spec.roleFields, p, names));
  };
  return {
    [`management.${ops.list}`]: async (req) => {
      const policies = service();
      const page = await policies.list(listInputOf(req));
      return reply.json(
        listEnvelope(
          await details(policies, page.items),
          { ...page.pagination, totalCount: page.totalCount },
          page.filterableFields,
        ),
      );
    },
    [`management.${ops.create}`]: async (req) =>
      reply.created((await service().create(body(req))).id, resource.collection),
    [`management.${ops.detail}`]: async (req) => {
      const policies = service();
      return reply.ok((await details(policies, [await policies.get(id(req))]))[0]);
    },
    [`management.${ops.update}`]: async (req) => {
      await service().update(id(req), body(req), 'replace');
      return reply.empty();
    },
    [`management.${ops.patch}`]: async (req) => {
      await service().update(id(req), body(req), 'patch');
      return reply.empty();
    },
    [`management.${ops.delete}`]: async (req) => {
      await service().delete(id(req));
      return reply.empty();
    },
  };
}
