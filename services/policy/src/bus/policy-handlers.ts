import type { OperationReply, OperationRequest } from '@ziti/contracts';
import { listInputOf, pageReply, reply } from '@ziti/platform';
import type { Policy, PolicyInput, PolicyService } from '../domain/policies.ts';
import { type RoleField, type RoleTarget, displayRoles, roleTargetOf } from '../domain/roles.ts';

type Links = Record<string, { href: string }>;
type RoleNames = Map<RoleTarget, Map<string, string>>;

/** What a resource file says about its wire shape: collection, link keys and the kind's own fields. */
export interface PolicyResource {
  collection: string;
  /** Link keys besides `self`, each `./<collection>/<id>/<key>` (ZITI-FACTS §5.4). */
  linkKeys: readonly string[];
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

/** A write of any policy kind: its create, update and patch bodies each decode to a `PolicyInput`. */
type PolicyWrite = OperationRequest & { body: PolicyInput };
type Handler<R = OperationRequest> = (req: R) => Promise<OperationReply>;

const id = (req: OperationRequest) => req.params.id ?? '';

/**
 * list/create/detail/update/patch/delete of one policy resource: parse, call the domain, map back.
 * `service` is read per request, so the operation keys exist before the service is wired. The
 * resource's transport names the operation each one serves.
 */
export function policyHandlers(
  resource: PolicyResource,
  service: () => PolicyService,
): {
  list: Handler;
  create: Handler<PolicyWrite>;
  detail: Handler;
  update: Handler<PolicyWrite>;
  patch: Handler<PolicyWrite>;
  delete: Handler;
} {
  const details = async (policies: PolicyService, list: Policy[]) => {
    const names = await policies.roleNames(list);
    return list.map((p) => policyDetail(resource, policies.spec.roleFields, p, names));
  };
  return {
    list: async (req) => {
      const policies = service();
      const page = await policies.list(listInputOf(req));
      return pageReply({ ...page, items: await details(policies, page.items) });
    },
    create: async (req) => reply.created((await service().create(req.body)).id, resource.collection),
    detail: async (req) => {
      const policies = service();
      return reply.ok((await details(policies, [await policies.get(id(req))]))[0]);
    },
    update: async (req) => {
      await service().update(id(req), req.body, 'replace');
      return reply.empty();
    },
    patch: async (req) => {
      await service().update(id(req), req.body, 'patch');
      return reply.empty();
    },
    delete: async (req) => {
      await service().delete(id(req));
      return reply.empty();
    },
  };
}
