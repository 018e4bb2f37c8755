import type { Bus, Database, Logger, RunnableService } from '@ziti/platform';
import { OutboxRelay, createServiceRuntime, readMigrations } from '@ziti/platform';
import { apiSessionsWiring } from './api-sessions/api-sessions.wiring.ts';
import { clientEdgeRoutersWiring } from './client-edge-routers/client-edge-routers.wiring.ts';
import { clientTerminatorsWiring } from './client-terminators/client-terminators.wiring.ts';
import { maintenanceWiring } from './maintenance/maintenance.wiring.ts';
import { policyOperations } from './operations.transport.ts';
import { policyEngineWiring } from './policies/policy-engine.wiring.ts';
import { policyAdviceWiring } from './policy-advice/policy-advice.wiring.ts';
import { postureDataWiring } from './posture/posture-data.wiring.ts';
import { readModelSubscriptionsWiring } from './read-models/read-models.wiring.ts';
import { roleAttributesWiring } from './read-models/role-attributes.wiring.ts';
import { relationsWiring } from './relations/relations.wiring.ts';
import { servicesWiring } from './services/services.wiring.ts';
import { sessionsWiring } from './sessions/sessions.wiring.ts';

export interface PolicyServiceDeps {
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/**
 * Composition root of the policy service: each resource's wiring (its `*.wiring.ts`, beside its
 * code) composed into the runtime's calls, operations and consumers.
 */
export function createPolicyService(deps: PolicyServiceDeps): RunnableService {
  const { database, bus, logger } = deps;
  const relay = new OutboxRelay(database, bus, 'policy', logger);
  const engine = policyEngineWiring(database, relay);
  const { identities, services, edgeRouters, routerPresence, access, links } = engine;
  const posture = postureDataWiring({ database, relay, bus, links });
  const sessions = sessionsWiring({ database, relay, bus, posture: posture.posture, grants: posture.reads });
  return createServiceRuntime({
    owner: 'policy',
    database,
    bus,
    logger,
    migrations,
    relay,
    calls: {
      ...sessions.calls,
      ...maintenanceWiring({
        database,
        bus,
        readModels: { identities, services, edgeRouters, routerPresence },
        links,
        access,
      }),
    },
    operations: policyOperations({
      roleAttributes: roleAttributesWiring(database, { identities, services, edgeRouters }),
      servicePolicies: engine.policies.service,
      edgeRouterPolicies: engine.policies.edgeRouter,
      serviceEdgeRouterPolicies: engine.policies.serviceEdgeRouter,
      sessions: sessions.sessions,
      serviceViews: servicesWiring(database, posture.posture),
      postureChecks: engine.postureChecks,
      postureData: posture.postureData,
      relations: relationsWiring(database, bus),
      advice: policyAdviceWiring(database),
      clientEdgeRouters: clientEdgeRoutersWiring(database),
      whatIf: engine.whatIf,
      clientTerminators: clientTerminatorsWiring(database, bus),
    }),
    subscriptions: readModelSubscriptionsWiring({ engine, apiSessions: apiSessionsWiring(), logger }),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
