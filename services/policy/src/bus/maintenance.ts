import { edgeRouterState, identityState, serviceState } from '@ziti/contracts';
import type { Bus, Database } from '@ziti/platform';
import { inEventTransaction, maintenanceHandlers, ownerEntityStates, parkedEventResults } from '@ziti/platform';
import type { z } from 'zod';
import type { EntityReadModel } from '../domain/ports.ts';
import { AccessDerivation } from '../domain/access.ts';
import { reconcileReadModel } from '../domain/read-model-integrity.ts';
import { PgAccessLinks } from '../store/pg-access-links.ts';
import { PgEdgeRouterReadModel, PgIdentityReadModel, PgServiceReadModel } from '../store/pg-identity-read-model.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  servicePolicies: 'service_policies',
  edgeRouterPolicies: 'edge_router_policies',
  serviceEdgeRouterPolicies: 'service_edge_router_policies',
  postureChecks: 'posture_checks',
  postureCheckTypes: 'posture_check_types',
  sessions: 'sessions',
  // API sessions live in Redis: auth counts them (policy knows only those it has heard of).
};

const parser =
  <S>(schema: z.ZodType<S>) =>
  (raw: Record<string, unknown>): S | null => {
    const parsed = schema.safeParse(raw);
    return parsed.success ? parsed.data : null;
  };

/**
 * policy's integrity check: each read model against its owner (identities → auth, services and
 * edge routers → inventory); fixing re-applies the owner's state.
 */
export function maintenanceCalls(
  database: Database,
  bus?: Bus,
): Record<string, (payload: unknown) => Promise<unknown>> {
  const check = async <S extends { id: string; name?: string }>(
    entity: string,
    owner: 'auth' | 'inventory',
    type: 'identity' | 'service' | 'edgeRouter',
    model: EntityReadModel<S>,
    schema: z.ZodType<S>,
    fix: boolean,
  ) =>
    reconcileReadModel({ entity, model, ownerPages: ownerEntityStates(bus!, owner, type), parse: parser(schema), fix });
  return maintenanceHandlers({
    service: 'policy',
    database,
    summaryTables,
    ...(bus
      ? {
          integrity: async (fix: boolean) =>
            [
              ...(await parkedEventResults(database.db)),
              ...(await check(
                'identity',
                'auth',
                'identity',
                new PgIdentityReadModel(database.db),
                identityState,
                fix,
              )),
              ...(await check(
                'service',
                'inventory',
                'service',
                new PgServiceReadModel(database.db),
                serviceState,
                fix,
              )),
              ...(await check(
                'edge router',
                'inventory',
                'edgeRouter',
                new PgEdgeRouterReadModel(database.db),
                edgeRouterState,
                fix,
              )),
            ]
              .map((r) => ({ ...r, description: `read model: ${r.description}` }))
              // After the read models: derived access against a computation from scratch (docs/adr/0009).
              .concat(
                await inEventTransaction(database, 'policy', undefined, (tx, events) =>
                  new AccessDerivation().check(new PgAccessLinks(tx), events, fix),
                ),
              ),
        }
      : {}),
  });
}
