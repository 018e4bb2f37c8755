import { BusTerminatorCatalog } from './bus/client-terminators.ts';
import { ClientTerminators } from './domain/client-terminators.ts';
import type { Bus, Database, Db, EventHandler, EventSubscription, Logger, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import {
  type EventSink,
  OutboxRelay,
  createReader,
  createServiceRuntime,
  createUnitOfWork,
  ownerEntityStates,
  parkedEventResults,
  readMigrations,
} from '@ziti/platform';
import {
  type Derivations,
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from './bus/read-model-events.ts';
import { AccessDerivation } from './domain/access.ts';
import { PolicyIntegrity } from './domain/policy-integrity.ts';
import { RoleAttributeService, type RoleAttributeStores } from './domain/role-attributes.ts';
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
import { type ApiSessionRecords, ApiSessionLifecycle, SessionService } from './domain/sessions.ts';
import { SessionCreationBatcher } from './store/pg-session-creation-batcher.ts';
import { PgApiSessions, PgSessions } from './store/pg-sessions.ts';
import { apiSessionHandlers } from './bus/api-session-events.ts';
import type { PostureEvaluator } from './domain/posture-ports.ts';
import { PgServiceView } from './store/pg-service-view.ts';
import { PostureCheckService, type PostureCheckStores } from './domain/posture-checks.ts';
import { PostureDataService, type PostureDataStores } from './domain/posture-data.ts';
import { PostureEvaluation } from './domain/posture-evaluation.ts';
import { PgPostureCheckStore, PgPostureCheckTypeStore } from './store/pg-posture-checks.ts';
import { PgPostureData, forgetApiSessionPosture } from './store/pg-posture-data.ts';

export interface PolicyServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** One subscription with more handlers of the same source. */
const withHandlers = (sub: EventSubscription, handlers: EventHandler[]): EventSubscription => ({
  ...sub,
  handlers: [...sub.handlers, ...handlers],
});

/** Composition root of the policy service: stores, domain, bus endpoints and consumers. */
export function createPolicyService(deps: PolicyServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'policy', deps.logger);
  const identities = (db: Db) => new PgIdentityReadModel(db);
  const services = (db: Db) => new PgServiceReadModel(db);
  const edgeRouters = (db: Db) => new PgEdgeRouterReadModel(db);
  const access = new AccessDerivation();
  const links = (db: Db) => new PgAccessLinks(db);
  // Consumers apply events in a transaction with its own event sink: access changes leave with it.
  const derive: Derivations = {
    identityChanged: (tx, id, ev) => access.identityChanged(links(tx), ev, id),
    serviceChanged: (tx, id, ev) => access.serviceChanged(links(tx), ev, id),
    edgeRouterChanged: (tx, id) => access.edgeRouterChanged(links(tx), id),
    configChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'config', id }),
    configTypeChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'configType', id }),
    overridesChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'identities', ids: [id] }),
    rebuild: (tx, ev) => access.rebuild(links(tx), ev),
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
  // Posture checks, posture data and their evaluation (ZITI-FACTS §6.3, §7.3, §10.1).
  const posture: PostureEvaluator = new PostureEvaluation(createReader(deps.database, (db) => new PgPostureData(db)));
  const postureCheckStores = (tx: Db, events: EventSink): PostureCheckStores => ({
    checks: new PgPostureCheckStore(tx),
    types: new PgPostureCheckTypeStore(tx),
    servicePolicies: pgServicePolicies(tx),
    links: links(tx),
    events,
  });
  const postureChecks = new PostureCheckService(
    createUnitOfWork(deps.database, relay, 'policy', postureCheckStores),
    createReader(deps.database, postureCheckStores),
    access,
  );
  const postureDataStores = (tx: Db): PostureDataStores => ({ data: new PgPostureData(tx), links: links(tx) });
  const postureData = new PostureDataService(
    createUnitOfWork(deps.database, relay, 'policy', postureDataStores),
    createReader(deps.database, postureDataStores),
  );
  const sessions = new SessionService(
    createUnitOfWork(deps.database, relay, 'policy', (tx) => new PgSessions(tx)),
    createReader(deps.database, (db) => new PgSessions(db, new SessionCreationBatcher(db))),
    posture,
  );
  const apiSessionRecords = (tx: Db): ApiSessionRecords => {
    const store = new PgApiSessions(tx);
    return {
      started: (x) => store.started(x),
      mfaPassed: (id, identityId, at) => store.mfaPassed(id, identityId, at),
      ended: (id, identityId, at) => store.ended(id, identityId, at),
      forgetPosture: (id) => forgetApiSessionPosture(tx, id),
    };
  };
  const read = createReader<PolicyStores>(deps.database, bind);
  const policies = (kind: typeof servicePolicyKind) => new PolicyService(kind, work, read, access);
  return createServiceRuntime({
    owner: 'policy',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: maintenanceCalls(
      deps.database,
      new PolicyIntegrity(
        {
          parkedEvents: () => parkedEventResults(deps.database.db),
          ownerPages: (owner, type) => ownerEntityStates(deps.bus, owner, type),
          readModels: {
            identities: identities(deps.database.db),
            services: services(deps.database.db),
            edgeRouters: edgeRouters(deps.database.db),
          },
          // No relay kick, as before: the relay hears the outbox's NOTIFY (or polls) for a fix's events.
          accessWork: createUnitOfWork(deps.database, undefined, 'policy', (tx, events) => ({
            links: links(tx),
            events,
          })),
        },
        access,
      ),
    ),
    operations: policyOperations({
      roleAttributes: new RoleAttributeService(
        createReader<RoleAttributeStores>(deps.database, (db) => ({
          identities: identities(db),
          services: services(db),
          edgeRouters: edgeRouters(db),
        })),
      ),
      servicePolicies: policies(servicePolicyKind),
      edgeRouterPolicies: policies(edgeRouterPolicyKind),
      serviceEdgeRouterPolicies: policies(serviceEdgeRouterPolicyKind),
      sessions,
      serviceViews: new ServiceViewService(
        createReader(deps.database, (db) => new PgServiceView(db)),
        posture,
      ),
      postureChecks,
      postureData,
      relations: new RelationService(createReader<RelationStore>(deps.database, (db) => new PgRelations(db))),
      advice: new PolicyAdvisor(createReader(deps.database, (db) => new PgAccessReads(db))),
      clientEdgeRouters: new ClientEdgeRouterService(createReader(deps.database, (db) => new PgAccessReads(db))),
      clientTerminators: new ClientTerminators(
        createReader(deps.database, (db) => new PgAccessReads(db)),
        new BusTerminatorCatalog(deps.bus),
      ),
    }),
    subscriptions: [
      withHandlers(
        authReadModelSubscription(identities, derive, deps.logger),
        apiSessionHandlers(new ApiSessionLifecycle(), apiSessionRecords),
      ),
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
