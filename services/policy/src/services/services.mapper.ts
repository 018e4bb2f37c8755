import type { OperationReply, OperationRequest, ServiceState } from '@ziti/contracts';
import { callerOf, pageReply } from '@ziti/platform';
import type { ListPage } from '@ziti/platform/list-page';
import type { ServiceView, ServiceViewService } from './service-view.domain.ts';

export function serviceLinks(id: string) {
  const links: Record<string, { href: string }> = { self: { href: `./services/${id}` } };
  for (const key of ['service-edge-router-policies', 'service-policies', 'terminators', 'configs'])
    links[key] = { href: `./services/${id}/${key}` };
  return links;
}

/** A service detail (ZITI-FACTS §10.3, §12.3) as the viewer sees it. */
export function serviceViewDetail(v: ServiceView) {
  const s = v.service;
  return {
    id: s.id,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    tags: s.tags,
    _links: serviceLinks(s.id),
    name: s.name,
    terminatorStrategy: s.terminatorStrategy,
    // none: null, as the reference reads an empty attribute list back (set to [] or never set)
    roleAttributes: s.roleAttributes.length > 0 ? s.roleAttributes : null,
    configs: s.configs,
    config: v.config,
    encryptionRequired: s.encryptionRequired,
    maxIdleTimeMillis: s.maxIdleTimeMillis,
    permissions: v.permissions,
    postureQueries: v.postureQueries,
  };
}

/**
 * A page of services listed for a relation, each with the caller's permissions and posture queries
 * (the reference renders every service detail for the caller, whoever the list is about).
 */
export async function servicePageReply(
  views: ServiceViewService,
  req: OperationRequest,
  page: ListPage<ServiceState>,
): Promise<OperationReply> {
  const { identityId, isAdmin } = callerOf(req);
  const viewer = { identityId, isAdmin };
  const seen = await views.viewsOf(viewer, page.items);
  return pageReply({ ...page, items: seen }, serviceViewDetail);
}
