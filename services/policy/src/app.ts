import type { Bus, Database, Db, EventHandler, EventSubscription, Logger, RunnableService } from '@ziti/platform';
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
import { PgAccessLinks } from './access/access-links.store.ts';
import { AccessDerivation } from './access/access.domain.ts';
import type { PolicyKind } from './access/access.ports.ts';
import { apiSessionHandlers } from './api-sessions/api-session-events.transport.ts';
import { ApiSessionLifecycle } from './api-sessions/api-sessions.domain.ts';
import type { ApiSessionRecords } from './api-sessions/api-sessions.ports.ts';
import { PgApiSessions } from './api-sessions/api-sessions.store.ts';
import { ClientEdgeRouterService } from './client-edge-routers/client-edge-routers.domain.ts';
import { PgClientEdgeRouters } from './client-edge-routers/client-edge-routers.store.ts';
import { ClientTerminators } from './client-terminators/client-terminators.domain.ts';
import { PgServiceVisibility } from './client-terminators/client-terminators.store.ts';
import { BusTerminatorCatalog } from './client-terminators/inventory-terminators.adapter.ts';
import { edgeRouterPolicyKind } from './policies/edge-router-policies.domain.ts';
import { pgEdgeRouterPolicies } from './policies/edge-router-policies.store.ts';
import { SystemEdgeRouterPolicies } from './policies/system-edge-router-policies.domain.ts';
import { PgSystemEdgeRouterPolicies } from './policies/system-edge-router-policies.store.ts';
import { pgMaintenance } from './maintenance/maintenance.store.ts';
import { maintenanceCalls } from './maintenance/maintenance.transport.ts';
import { PolicyIntegrity } from './maintenance/policy-integrity.domain.ts';
import { policyOperations } from './operations.transport.ts';
import { PolicyAdvisor } from './policy-advice/policy-advice.domain.ts';
import { PgAdvice } from './policy-advice/policy-advice.store.ts';
import { PostureCheckService } from './posture-checks/posture-checks.domain.ts';
import type { PostureCheckStores } from './posture-checks/posture-checks.ports.ts';
import { PgPostureCheckStore, PgPostureCheckTypeStore } from './posture-checks/posture-checks.store.ts';
import { PostureEvaluation } from './posture-checks/posture-evaluation.domain.ts';
import type { PostureEvaluator } from './posture-checks/posture-evaluation.ports.ts';
import { BusApiSessionDirectory } from './posture-data/auth-api-sessions.adapter.ts';
import { PostureDataService } from './posture-data/posture-data.domain.ts';
import type { PostureDataStores } from './posture-data/posture-data.ports.ts';
import { PgPostureData, forgetApiSessionPosture } from './posture-data/posture-data.store.ts';
import {
  type Derivations,
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from './read-models/read-model-events.transport.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgEdgeRouterReadModel,
  PgIdentityReadModel,
  PgIdentityServiceConfigsReadModel,
  PgRouterPresenceReadModel,
  PgServiceReadModel,
} from './read-models/read-models.store.ts';
import { RoleAttributeService } from './read-models/role-attributes.domain.ts';
import type { RoleAttributeStores } from './read-models/role-attributes.ports.ts';
import { BusRelatedEntityDetails } from './relations/owner-details.adapter.ts';
import { RelationService } from './relations/relations.domain.ts';
import type { RelationStore } from './relations/relations.ports.ts';
import { PgRelations } from './relations/relations.store.ts';
import { serviceEdgeRouterPolicyKind } from './policies/service-edge-router-policies.domain.ts';
import { pgServiceEdgeRouterPolicies } from './policies/service-edge-router-policies.store.ts';
import { servicePolicyKind } from './policies/service-policies.domain.ts';
import { pgServicePolicies } from './policies/service-policies.store.ts';
import { ServiceViewService } from './services/service-view.domain.ts';
import { PgServiceView } from './services/service-view.store.ts';
import { FabricCircuitPaths } from './sessions/fabric-route-paths.adapter.ts';
import { SessionCreationBatcher } from './sessions/session-creation-batcher.store.ts';
import { SessionUseAuthority } from './sessions/session-use.domain.ts';
import { SessionService } from './sessions/sessions.domain.ts';
import { PgSessions } from './sessions/sessions.store.ts';
import { sessionCalls } from './sessions/sessions.transport.ts';
import { EntityChanges } from './policies/entity-changes.domain.ts';
import { PolicyService } from './policies/policies.domain.ts';
import type { PolicyStores, PolicyUnitOfWork } from './policies/policies.ports.ts';
import { PgRoleTargets } from './policies/roles.store.ts';
import { WhatIfAnalysis } from './what-if/what-if.domain.ts';
import { PgWhatIfProbe, whatIfSandbox } from './what-if/what-if.store.ts';

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

/**
 * The policy engine on one database: the read models it keeps, the links it derives (docs/adr/0009,
 * 0011), the domain services that change policies and posture checks (each change in a unit of work
 * of its own; the relay, when given, kicked after its commit) and the what-if analysis, which runs
 * the same services and the same read-model update path in a sandbox transaction that is always
 * rolled back (what-if/what-if.store.ts).
 */
export function policyEngine(database: Database, relay: OutboxRelay | undefined) {
  const identities = (db: Db) => new PgIdentityReadModel(db);
  const services = (db: Db) => new PgServiceReadModel(db);
  const edgeRouters = (db: Db) => new PgEdgeRouterReadModel(db);
  const routerPresence = (db: Db) => new PgRouterPresenceReadModel(db);
  const access = new AccessDerivation();
  const links = (db: Db) => new PgAccessLinks(db);
  const bind = (tx: Db, events: EventSink): PolicyStores => ({
    servicePolicies: pgServicePolicies(tx),
    edgeRouterPolicies: pgEdgeRouterPolicies(tx),
    serviceEdgeRouterPolicies: pgServiceEdgeRouterPolicies(tx),
    systemEdgeRouterPolicies: new PgSystemEdgeRouterPolicies(tx),
    targets: new PgRoleTargets(tx),
    links: links(tx),
    events,
  });
  const postureCheckStores = (tx: Db, events: EventSink): PostureCheckStores => ({
    ...bind(tx, events),
    checks: new PgPostureCheckStore(tx),
    types: new PgPostureCheckTypeStore(tx),
  });
  const policyServices = (work: PolicyUnitOfWork, read: PolicyUnitOfWork): Record<PolicyKind, PolicyService> => ({
    service: new PolicyService(servicePolicyKind, work, read, access),
    edgeRouter: new PolicyService(edgeRouterPolicyKind, work, read, access),
    serviceEdgeRouter: new PolicyService(serviceEdgeRouterPolicyKind, work, read, access),
  });
  const work = createUnitOfWork<PolicyStores>(database, relay, 'policy', bind);
  const read = createReader<PolicyStores>(database, bind);
  const policies = policyServices(work, read);
  // What owners' entity changes do to links, roles and system policies (policies/entity-changes.domain.ts).
  const entities = new EntityChanges(access, policies, new SystemEdgeRouterPolicies());
  // Consumers apply events in a transaction with its own event sink: access changes leave with it.
  const derive: Derivations = {
    identityChanged: (tx, id, ev) => entities.identityChanged(bind(tx, ev), id),
    serviceChanged: (tx, id, ev) => entities.serviceChanged(bind(tx, ev), id),
    edgeRouterChanged: (tx, id, ev) => entities.edgeRouterChanged(bind(tx, ev), id),
    identityDeleted: (tx, id, ev) => entities.identityChanged(bind(tx, ev), id, true),
    serviceDeleted: (tx, id, ev) => entities.serviceChanged(bind(tx, ev), id, true),
    edgeRouterDeleted: (tx, id, ev) => entities.edgeRouterChanged(bind(tx, ev), id, true),
    configChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'config', id }),
    configTypeChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'configType', id }),
    overridesChanged: (tx, id) => access.serviceViewChanged(links(tx), { kind: 'identities', ids: [id] }),
    rebuild: (tx, ev, entity) => entities.rebuilt(bind(tx, ev), entity),
    viewsRebuilt: (tx) => access.serviceViewChanged(links(tx), { kind: 'all' }),
  };
  /** The stores of one open transaction as a unit of work: every call runs in it. */
  const inTransaction =
    <S>(stores: S) =>
    <T>(fn: (stores: S) => Promise<T>) =>
      fn(stores);
  const whatIf = new WhatIfAnalysis(
    whatIfSandbox(
      database,
      (tx) => links(tx).lock(),
      (tx, events) => {
        const policyWork = inTransaction(bind(tx, events));
        const checkWork = inTransaction(postureCheckStores(tx, events));
        return {
          policies: policyServices(policyWork, policyWork),
          postureChecks: new PostureCheckService(checkWork, checkWork, access, entities),
          // The path an owner's event takes (read-model-events.transport.ts): the read model, then the derivation.
          identities: { model: identities(tx), changed: (id) => derive.identityChanged(tx, id, events) },
          services: { model: services(tx), changed: (id) => derive.serviceChanged(tx, id, events) },
          edgeRouters: { model: edgeRouters(tx), changed: (id) => derive.edgeRouterChanged(tx, id, events) },
          probe: new PgWhatIfProbe(tx),
        };
      },
    ),
  );
  return {
    identities,
    services,
    edgeRouters,
    routerPresence,
    access,
    links,
    derive,
    postureCheckStores,
    policies,
    postureChecks: new PostureCheckService(
      createUnitOfWork(database, relay, 'policy', postureCheckStores),
      createReader(database, postureCheckStores),
      access,
      entities,
    ),
    whatIf,
  };
}

/** Composition root of the policy service: stores, domain, bus endpoints and consumers. */
export function createPolicyService(deps: PolicyServiceDeps): RunnableService {
  const relay = new OutboxRelay(deps.database, deps.bus, 'policy', deps.logger);
  const engine = policyEngine(deps.database, relay);
  const { identities, services, edgeRouters, routerPresence, access, links, derive, postureChecks } = engine;
  // Posture checks, posture data and their evaluation (ZITI-FACTS §6.3, §7.3, §10.1).
  const postureReads = createReader(deps.database, (db) => new PgPostureData(db));
  const posture: PostureEvaluator = new PostureEvaluation(postureReads);
  const postureDataStores = (tx: Db): PostureDataStores => ({ data: new PgPostureData(tx), links: links(tx) });
  const postureData = new PostureDataService(
    createUnitOfWork(deps.database, relay, 'policy', postureDataStores),
    createReader(deps.database, postureDataStores),
    new BusApiSessionDirectory(deps.bus),
  );
  const sessions = new SessionService(
    createUnitOfWork(deps.database, relay, 'policy', (tx) => new PgSessions(tx)),
    createReader(deps.database, (db) => new PgSessions(db, new SessionCreationBatcher(db))),
    posture,
    new FabricCircuitPaths(deps.bus),
    postureReads,
  );
  // Asked by the router edge on every dial and bind: one statement on the pool.
  const sessionUse = new SessionUseAuthority(createReader(deps.database, (db) => new PgSessions(db)));
  const apiSessionRecords = (tx: Db): ApiSessionRecords => {
    const store = new PgApiSessions(tx);
    return {
      started: (x) => store.started(x),
      mfaPassed: (id, identityId, at) => store.mfaPassed(id, identityId, at),
      ended: (id, identityId, at) => store.ended(id, identityId, at),
      forgetPosture: (id) => forgetApiSessionPosture(tx, id),
    };
  };
  return createServiceRuntime({
    owner: 'policy',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    calls: {
      ...sessionCalls(sessionUse),
      ...maintenanceCalls(
        pgMaintenance(
          deps.database,
          new PolicyIntegrity(
            {
              parkedEvents: () => parkedEventResults(deps.database.db),
              ownerPages: (owner, type) => ownerEntityStates(deps.bus, owner, type),
              readModels: {
                identities: identities(deps.database.db),
                services: services(deps.database.db),
                edgeRouters: edgeRouters(deps.database.db),
                routerPresence: routerPresence(deps.database.db),
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
      ),
    },
    operations: policyOperations({
      roleAttributes: new RoleAttributeService(
        createReader<RoleAttributeStores>(deps.database, (db) => ({
          identities: identities(db),
          services: services(db),
          edgeRouters: edgeRouters(db),
        })),
      ),
      servicePolicies: engine.policies.service,
      edgeRouterPolicies: engine.policies.edgeRouter,
      serviceEdgeRouterPolicies: engine.policies.serviceEdgeRouter,
      sessions,
      serviceViews: new ServiceViewService(
        createReader(deps.database, (db) => new PgServiceView(db)),
        posture,
      ),
      postureChecks,
      postureData,
      relations: new RelationService(
        createReader<RelationStore>(deps.database, (db) => new PgRelations(db)),
        new BusRelatedEntityDetails(deps.bus),
      ),
      advice: new PolicyAdvisor(createReader(deps.database, (db) => new PgAdvice(db))),
      clientEdgeRouters: new ClientEdgeRouterService(createReader(deps.database, (db) => new PgClientEdgeRouters(db))),
      whatIf: engine.whatIf,
      clientTerminators: new ClientTerminators(
        createReader(deps.database, (db) => new PgServiceVisibility(db)),
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
          presence: routerPresence,
        },
        derive,
        deps.logger,
      ),
    ],
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
