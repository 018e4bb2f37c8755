import { type Db, json, listRows, toListPage } from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import {
  edgeRouterQuery,
  edgeRouterWithPresenceOf,
  identityRoutersOf as identityRouters,
  serviceRoutersOf as serviceRouters,
  serviceVisible,
} from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { ClientEdgeRouterStore } from './client-edge-routers.ports.ts';

type Row = { state: unknown };

/**
 * The client's edge-router lists, from the access tables (docs/adr/0009): rows joined to the live
 * read models, never policies evaluated at read time.
 */
export class PgClientEdgeRouters implements ClientEdgeRouterStore {
  constructor(private readonly db: Db) {}

  private async routers(input: ListInput, scope: string, params: unknown[]): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    const listed = await listRows<Row>(this.db, edgeRouterQuery, input, {
      scope: { sql: `not ${alias}.deleted and ${scope}`, params },
      columns: `${edgeRouterWithPresenceOf(alias)} as state`,
    });
    return toListPage(listed, (r) => json<EdgeRouterWithPresence>(r.state));
  }

  verifiedEdgeRouters(identityId: string | undefined, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    return identityId === undefined
      ? this.routers(input, `${alias}.is_verified`, [])
      : this.routers(input, `${alias}.is_verified and ${alias}.id in (${identityRouters('$1')})`, [identityId]);
  }

  serviceVisible(serviceId: string, identityId: string, isAdmin: boolean): Promise<boolean> {
    return serviceVisible(this.db, serviceId, identityId, isAdmin);
  }

  sharedEdgeRouters(
    identityId: string,
    serviceId: string,
    input: ListInput,
  ): Promise<ListPage<EdgeRouterWithPresence>> {
    const alias = edgeRouterQuery.alias;
    return this.routers(
      input,
      `${alias}.id in (${identityRouters('$1')}) and ${alias}.id in (${serviceRouters('$2')})`,
      [identityId, serviceId],
    );
  }
}
