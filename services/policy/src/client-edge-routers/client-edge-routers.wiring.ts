import { type Database, createReader } from '@ziti/platform';
import { ClientEdgeRouterService } from './client-edge-routers.domain.ts';
import { PgClientEdgeRouters } from './client-edge-routers.store.ts';

/** The client's edge-router lists, read on the pool. */
export const clientEdgeRoutersWiring = (database: Database) =>
  new ClientEdgeRouterService(createReader(database, (db) => new PgClientEdgeRouters(db)));
