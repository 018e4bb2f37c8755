import { ApiError, type IdentityState, type ServiceState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { PolicyKind } from '../access/access.ports.ts';
import type { PostureCheck } from '../posture-checks/posture-checks.domain.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Policy } from '../shared/policies.domain.ts';
import type { RelationReader, RelationStore } from './relations.ports.ts';

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

/** The association lists of ZITI-FACTS §6.3: a missing (or deleted) source is NOT_FOUND. */
export class RelationService {
  constructor(private readonly read: RelationReader) {}

  identities(of: Relation, input: ListInput): Promise<ListPage<IdentityState>> {
    return this.within(of, (s) => s.identities(of, input));
  }

  services(of: Relation, input: ListInput): Promise<ListPage<ServiceState>> {
    return this.within(of, (s) => s.services(of, input));
  }

  edgeRouters(of: Relation, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    return this.within(of, (s) => s.edgeRouters(of, input));
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
