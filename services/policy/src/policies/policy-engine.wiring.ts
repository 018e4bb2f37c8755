import {
  type Database,
  type Db,
  type EventSink,
  type OutboxRelay,
  createReader,
  createUnitOfWork,
} from '@ziti/platform';
import { PgAccessLinks } from '../access/access-links.store.ts';
import { AccessDerivation } from '../access/access.domain.ts';
import type { PolicyKind } from '../access/access.ports.ts';
import { PostureCheckService } from '../posture/posture-checks.domain.ts';
import type { PostureCheckStores } from '../posture/posture-checks.ports.ts';
import { PgPostureCheckStore, PgPostureCheckTypeStore } from '../posture/posture-checks.store.ts';
import type { Derivations } from '../read-models/read-model-events.transport.ts';
import {
  PgEdgeRouterReadModel,
  PgIdentityReadModel,
  PgRouterPresenceReadModel,
  PgServiceReadModel,
} from '../read-models/read-models.store.ts';
import { WhatIfAnalysis } from '../what-if/what-if.domain.ts';
import { PgWhatIfProbe, whatIfSandbox } from '../what-if/what-if.store.ts';
import { edgeRouterPolicyKind } from './edge-router-policies.domain.ts';
import { pgEdgeRouterPolicies } from './edge-router-policies.store.ts';
import { EntityChanges } from './entity-changes.domain.ts';
import { PolicyService } from './policies.domain.ts';
import type { PolicyStores, PolicyUnitOfWork } from './policies.ports.ts';
import { PgRoleTargets } from './roles.store.ts';
import { serviceEdgeRouterPolicyKind } from './service-edge-router-policies.domain.ts';
import { pgServiceEdgeRouterPolicies } from './service-edge-router-policies.store.ts';
import { servicePolicyKind } from './service-policies.domain.ts';
import { pgServicePolicies } from './service-policies.store.ts';
import { SystemEdgeRouterPolicies } from './system-edge-router-policies.domain.ts';
import { PgSystemEdgeRouterPolicies } from './system-edge-router-policies.store.ts';

/**
 * The policy engine on one database: the read models it keeps, the links it derives (docs/adr/0009,
 * 0011), the domain services that change policies and posture checks (each change in a unit of work
 * of its own; the relay, when given, kicked after its commit) and the what-if analysis, which runs
 * the same services and the same read-model update path in a sandbox transaction that is always
 * rolled back (what-if/what-if.store.ts). The policy kinds, posture checks and what-if share it: one
 * derivation, one set of read models.
 */
export function policyEngineWiring(database: Database, relay: OutboxRelay | undefined) {
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
    identityChanged: (tx, id, ev, change) => entities.identityChanged(bind(tx, ev), id, false, change),
    serviceChanged: (tx, id, ev, change) => entities.serviceChanged(bind(tx, ev), id, false, change),
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
