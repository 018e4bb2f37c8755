import {
  type Bus,
  type CallTable,
  type Database,
  type Db,
  createUnitOfWork,
  ownerEntityStates,
  parkedEventResults,
} from '@ziti/platform';
import type { AccessDerivation } from '../access/access.domain.ts';
import type { AccessLinks } from '../access/access.ports.ts';
import type {
  PgEdgeRouterReadModel,
  PgIdentityReadModel,
  PgRouterPresenceReadModel,
  PgServiceReadModel,
} from '../read-models/read-models.store.ts';
import { pgMaintenance } from './maintenance.store.ts';
import { maintenanceCalls } from './maintenance.transport.ts';
import { PolicyIntegrity } from './policy-integrity.domain.ts';

/**
 * policy's maintenance calls: `/summary` counts of its tables, snapshots, and its integrity check
 * (parked events, the read models against their owners' state pages, then the derived access).
 */
export function maintenanceWiring(d: {
  database: Database;
  bus: Bus;
  readModels: {
    identities: (db: Db) => PgIdentityReadModel;
    services: (db: Db) => PgServiceReadModel;
    edgeRouters: (db: Db) => PgEdgeRouterReadModel;
    routerPresence: (db: Db) => PgRouterPresenceReadModel;
  };
  links: (db: Db) => AccessLinks;
  access: AccessDerivation;
}): CallTable {
  const { database, bus, readModels } = d;
  const integrity = new PolicyIntegrity(
    {
      parkedEvents: () => parkedEventResults(database.db),
      ownerPages: (owner, type) => ownerEntityStates(bus, owner, type),
      readModels: {
        identities: readModels.identities(database.db),
        services: readModels.services(database.db),
        edgeRouters: readModels.edgeRouters(database.db),
        routerPresence: readModels.routerPresence(database.db),
      },
      // No relay kick, as before: the relay hears the outbox's NOTIFY (or polls) for a fix's events.
      accessWork: createUnitOfWork(database, undefined, 'policy', (tx, events) => ({ links: d.links(tx), events })),
    },
    d.access,
  );
  return maintenanceCalls(pgMaintenance(database, integrity));
}
