import type { Bus, Database, Db, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import {
  type EventSink,
  OutboxRelay,
  createReader,
  createServiceRuntime,
  createUnitOfWork,
  emitWithin,
  readMigrations,
} from '@ziti/platform';
import {
  type Derivations,
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from './bus/read-model-events.ts';
import { AccessDerivation } from './domain/access.ts';
import {
  PolicyService,
  type PolicyStores,
  edgeRouterPolicyKind,
  serviceEdgeRouterPolicyKind,
  servicePolicyKind,
} from './domain/policies.ts';
import { RelationService, type RelationStore } from './domain/relations.ts';
import { PgAccessLinks } from './store/pg-access-links.ts';
import { PgRelations } from './store/pg-relations.ts';
import {
  PgRoleTargets,
  pgEdgeRouterPolicies,
  pgServiceEdgeRouterPolicies,
  pgServicePolicies,
} from './store/pg-policy-stores.ts';
import { policyOperations } from './bus/operations.ts';
import { PolicyAdvisor } from './domain/advice.ts';
import { ClientEdgeRouterService } from './domain/client-edge-routers.ts';
import { PgAccessReads } from './store/pg-access-reads.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgEdgeRouterReadModel,
  PgIdentityReadModel,
  PgIdentityServiceConfigsReadModel,
  PgServiceReadModel,
} from './store/pg-identity-read-model.ts';
import { ServiceViewService } from './domain/service-view.ts';
import { PgServiceView } from './store/pg-service-view.ts';

export interface PolicyServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the policy service: stores, domain, bus endpoints and consumers. */
export function createPolicyService(deps: PolicyServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'policy', deps.logger);
  const identities = (db: Db) => new PgIdentityReadModel(db);
  const services = (db: Db) => new PgServiceReadModel(db);
  const edgeRouters = (db: Db) => new PgEdgeRouterReadModel(db);
  const access = new AccessDerivation();
  const links = (db: Db) => new PgAccessLinks(db);
  // Consumers apply events in their own transaction: access changes are announced in it.
  const derive: Derivations = {
    identityChanged: (tx, id) => emitWithin(tx, 'policy', (ev) => access.identityChanged(links(tx), ev, id)),
    serviceChanged: (tx, id) => emitWithin(tx, 'policy', (ev) => access.serviceChanged(links(tx), ev, id)),
    edgeRouterChanged: (tx, id) => access.edgeRouterChanged(links(tx), id),
    configChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'config', id }),
    configTypeChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'configType', id }),
    overridesChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'identities', ids: [id] }),
    rebuild: (tx) => emitWithin(tx, 'policy', (ev) => access.rebuild(links(tx), ev)),
    viewsRebuilt: (tx) => access.serviceViewChanged(links(tx), { kind: 'all' }),
  };
  const bind = (tx: Db, events: EventSink): PolicyStores => ({
    servicePolicies: pgServicePolicies(tx),
    edgeRouterPolicies: pgEdgeRouterPolicies(tx),
    serviceEdgeRouterPolicies: pgServiceEdgeRouterPolicies(tx),
    targets: new PgRoleTargets(tx),
    links: links(tx),
    events,
  });
  const work = createUnitOfWork<PolicyStores>(deps.database, relay, 'policy', bind);
  const read = createReader<PolicyStores>(deps.database, bind);
  const policies = (kind: typeof servicePolicyKind) => new PolicyService(kind, work, read, access);
  return createServiceRuntime({
    owner: 'policy',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: maintenanceCalls(deps.database, deps.bus),
    operations: policyOperations({
      db: deps.database.db,
      identities,
      services,
      edgeRouters,
      servicePolicies: policies(servicePolicyKind),
      edgeRouterPolicies: policies(edgeRouterPolicyKind),
      serviceEdgeRouterPolicies: policies(serviceEdgeRouterPolicyKind),
      serviceViews: new ServiceViewService(createReader(deps.database, (db) => new PgServiceView(db))),
      relations: new RelationService(createReader<RelationStore>(deps.database, (db) => new PgRelations(db))),
      advice: new PolicyAdvisor(createReader(deps.database, (db) => new PgAccessReads(db))),
      clientEdgeRouters: new ClientEdgeRouterService(createReader(deps.database, (db) => new PgAccessReads(db))),
    }),
    subscriptions: [
      authReadModelSubscription(identities, derive, deps.logger),
      inventoryReadModelSubscription(
        {
          services,
          edgeRouters,
          configs: (db) => new PgConfigReadModel(db),
          configTypes: (db) => new PgConfigTypeReadModel(db),
          overrides: (db) => new PgIdentityServiceConfigsReadModel(db),
        },
        derive,
        deps.logger,
      ),
    ],
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
