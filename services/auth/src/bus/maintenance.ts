import { type EntityStatesRequest, type IntegrityResult, edgeRouterState } from '@ziti/contracts';
import type { ApiSessionStore, Bus, CallTable, Database, Db, EventSink } from '@ziti/platform';
import { inEventTransaction, maintenanceHandlers, ownerEntityStates, readOnlyEventSink } from '@ziti/platform';
import { identityState } from '../domain/identity-service.ts';
import type { Identity } from '../domain/model.ts';
import type { IdentityStore } from '../domain/ports.ts';
import { type RouterIdentities, type RouterIdentityStores, routerIdentityType } from '../domain/router-identities.ts';
import { type CheckedOutstandingEnrollments, checkOutstandingEnrollments } from './enrollment-integrity.ts';

/**
 * Service-wide maintenance calls used by inventory's fan-out operations (`/summary`,
 * `/database/*`): entity counts of this service, its integrity check and fix, its snapshot.
 * Each service lists here the tables it owns that `/summary` reports.
 */
export const summaryTables: Record<string, string> = {
  identities: 'identities',
  identityTypes: 'identity_types',
  authenticators: 'authenticators',
  authPolicies: 'auth_policies',
  externalJwtSigners: 'external_jwt_signers',
  mfas: 'mfa',
};

type Stores = RouterIdentityStores & {
  identities: Pick<IdentityStore, 'get' | 'insert' | 'update' | 'delete' | 'findByName' | 'list'>;
};

export interface AuthMaintenanceDeps {
  bus: Bus;
  routerIdentities: RouterIdentities;
  /** The stores of one transaction (identities and its event sink). */
  stores: (tx: Db, events: EventSink) => Stores;
  /** The read model of pki-enrollment's outstanding enrollments (docs/adr/0012), checked against its pages. */
  outstandingEnrollments?: (db: Db) => CheckedOutstandingEnrollments;
  /** Live API sessions (in Redis), which `/summary` counts as `apiSessions`. */
  sessions?: Pick<ApiSessionStore, 'countLive'>;
}

/** A ZitiQL string literal. */
const quote = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** One page of identities in bytewise id order, through the identity store (so states match the events). */
async function identityPage(s: Stores, request: EntityStatesRequest): Promise<Identity[]> {
  if (request.ids) {
    if (request.ids.length === 0) return [];
    return (await s.identities.list({ filter: `id in [${request.ids.map(quote).join(', ')}] sort by id limit none` }))
      .items;
  }
  const where = request.after === undefined ? 'true' : `id > ${quote(request.after)}`;
  return (await s.identities.list({ filter: `${where} sort by id limit ${request.limit ?? 500}` })).items;
}

/**
 * Router identities against inventory's edge routers: every tunneler-enabled router has its
 * Router identity with its name, and no Router identity outlives its router or its tunneling.
 * Fixing applies the router's current state.
 */
async function checkRouterIdentities(
  database: Database,
  deps: AuthMaintenanceDeps,
  fix: boolean,
): Promise<IntegrityResult[]> {
  const results: IntegrityResult[] = [];
  const routers = new Set<string>();
  for await (const { states: page } of ownerEntityStates(deps.bus, 'inventory', 'edgeRouter')) {
    for (const raw of page) {
      const parsed = edgeRouterState.safeParse(raw);
      if (!parsed.success) continue;
      const router = parsed.data;
      routers.add(router.id);
      const identity = await database.transaction((tx) => deps.stores(tx, readOnlyEventSink).identities.get(router.id));
      const problem = !router.isTunnelerEnabled
        ? identity?.typeId === routerIdentityType
          ? `router identity ${router.id} exists but edge router ${router.name} is not tunneler-enabled`
          : null
        : !identity
          ? `tunneler-enabled edge router ${router.id} (${router.name}) has no router identity`
          : identity.typeId === routerIdentityType &&
              identity.name !== router.name &&
              identity.name !== `${router.name}-${router.id}`
            ? `router identity ${router.id} is named ${identity.name}, its edge router ${router.name}`
            : null;
      if (!problem) continue;
      if (fix)
        await inEventTransaction(database, 'auth', undefined, (tx, events) =>
          deps.routerIdentities.apply(deps.stores(tx, events), router, false, true),
        );
      results.push({ description: problem, fixed: fix });
    }
  }
  let after: string | undefined;
  for (;;) {
    const where = `type = "${routerIdentityType}"${after === undefined ? '' : ` and id > ${quote(after)}`}`;
    const page = await database.transaction((tx) =>
      deps.stores(tx, readOnlyEventSink).identities.list({ filter: `${where} sort by id limit 500` }),
    );
    for (const identity of page.items) {
      if (routers.has(identity.id)) continue;
      if (fix)
        await inEventTransaction(database, 'auth', undefined, (tx, events) =>
          deps.routerIdentities.remove(deps.stores(tx, events), identity),
        );
      results.push({ description: `router identity ${identity.id} (${identity.name}) has no edge router`, fixed: fix });
    }
    if (page.items.length < 500) break;
    after = page.items[page.items.length - 1]!.id;
  }
  return results;
}

export function maintenanceCalls(database: Database, deps?: AuthMaintenanceDeps): CallTable {
  return maintenanceHandlers({
    service: 'auth',
    database,
    summaryTables,
    ...(deps?.sessions ? { summaryCounts: async () => ({ apiSessions: await deps.sessions!.countLive() }) } : {}),
    ...(deps
      ? {
          integrity: async (fix: boolean) => [
            ...(await checkRouterIdentities(database, deps, fix)),
            ...(deps.outstandingEnrollments
              ? await checkOutstandingEnrollments(database, deps.bus, deps.outstandingEnrollments, fix)
              : []),
          ],
          entityStates: {
            identity: async (request, tx) =>
              (await identityPage(deps.stores(tx, readOnlyEventSink), request)).map((i) => identityState(i)),
          },
        }
      : {}),
  });
}
