import { ApiError, type EntityDetail, type IdentityState, type ServiceState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { PolicyKind } from '../access/access.ports.ts';
import type { PostureCheck } from '../posture/posture-checks.domain.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Policy } from '../policies/policies.domain.ts';
import type { RelatedEntityDetails, RelationReader, RelationStore } from './relations.ports.ts';

/** What a "what is related" list starts from: an entity or a policy, by id. */
export type RelationSource =
  'identity' | 'service' | 'edgeRouter' | 'servicePolicy' | 'edgeRouterPolicy' | 'serviceEdgeRouterPolicy';

/** `policyType` of `/identities/{id}/services` and `/services/{id}/identities`. */
export type AccessType = 'dial' | 'bind';

export interface Relation {
  from: RelationSource;
  id: string;
  /** Only identity ↔ service access through Dial (or Bind) policies. */
  accessType?: AccessType;
}

/** The singular entity type of not-found causes, as the details of each source say it. */
const singular: Record<RelationSource, string> = {
  identity: 'identity',
  service: 'service',
  edgeRouter: 'edgeRouter',
  servicePolicy: 'servicePolicy',
  edgeRouterPolicy: 'edgeRouterPolicy',
  serviceEdgeRouterPolicy: 'serviceEdgeRouterPolicy',
};

/**
 * A page of related entities shown as their owner's details: the page (its ids, order, paging and
 * total) is the read model's; each entity is the owner's detail of it. An entity the owner no
 * longer knows (deleted since the read model's page was read) is left out of the page.
 */
export async function withOwnerDetails<T extends { id: string }>(
  page: ListPage<T>,
  detailsOf: (ids: string[]) => Promise<EntityDetail[]>,
): Promise<ListPage<EntityDetail>> {
  const ids = page.items.map((item) => item.id);
  const found = new Map((ids.length === 0 ? [] : await detailsOf(ids)).map((d) => [d.id, d]));
  return { ...page, items: ids.flatMap((id) => found.get(id) ?? []) };
}

/** The association lists of ZITI-FACTS §6.3: a missing (or deleted) source is NOT_FOUND. */
export class RelationService {
  constructor(
    private readonly read: RelationReader,
    /** auth's and inventory's details of the identities and edge routers the lists show. */
    private readonly details: RelatedEntityDetails,
  ) {}

  identities(of: Relation, input: ListInput): Promise<ListPage<IdentityState>> {
    return this.within(of, (s) => s.identities(of, input));
  }

  /**
   * The related identities as auth shows them (`GET /identities/{id}`); the owner is asked after the
   * read, with no connection held.
   */
  async identityDetails(of: Relation, input: ListInput): Promise<ListPage<EntityDetail>> {
    return withOwnerDetails(await this.identities(of, input), (ids) => this.details.identities(ids));
  }

  services(of: Relation, input: ListInput): Promise<ListPage<ServiceState>> {
    return this.within(of, (s) => s.services(of, input));
  }

  edgeRouters(of: Relation, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    return this.within(of, (s) => s.edgeRouters(of, input));
  }

  /** The related edge routers as inventory shows them (`GET /edge-routers/{id}`). */
  async edgeRouterDetails(of: Relation, input: ListInput): Promise<ListPage<EntityDetail>> {
    return withOwnerDetails(await this.edgeRouters(of, input), (ids) => this.details.edgeRouters(ids));
  }

  policies(kind: PolicyKind, of: Relation, input: ListInput): Promise<ListPage<Policy>> {
    return this.within(of, (s) => s.policies(kind, of, input));
  }

  /** Posture checks of a service policy. */
  postureChecks(of: Relation, input: ListInput): Promise<ListPage<PostureCheck>> {
    return this.within(of, (s) => s.postureChecks(of, input));
  }

  private within<T>(of: Relation, fn: (s: RelationStore) => Promise<T>): Promise<T> {
    return this.read(async (s) => {
      if (!(await s.exists(of.from, of.id))) throw ApiError.notFound(singular[of.from], of.id);
      return fn(s);
    });
  }
}
