import type { OperationReply } from '@ziti/contracts';
import { pageReply } from '@ziti/platform';
import type { ListPage } from '@ziti/platform/list-page';
import type { Policy, PolicyService } from './policies.domain.ts';
import { type RoleField, type RoleTarget, displayRoles, roleTargetOf } from './roles.domain.ts';

type Links = Record<string, { href: string }>;
type RoleNames = Map<RoleTarget, Map<string, string>>;

/** What a policy kind's mapper says about its wire shape: collection, link keys and the kind's own fields. */
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

/** A page of policies with their `…RolesDisplay` names, as the policy lists answer them. */
export async function policyPageReply(
  resource: PolicyResource,
  policies: PolicyService,
  page: ListPage<Policy>,
): Promise<OperationReply> {
  const names = await policies.roleNames(page.items);
  return pageReply(page, (p) => policyDetail(resource, policies.spec.roleFields, p, names));
}
