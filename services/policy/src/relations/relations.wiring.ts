import { type Bus, type Database, createReader } from '@ziti/platform';
import { BusRelatedEntityDetails } from './owner-details.adapter.ts';
import { RelationService } from './relations.domain.ts';
import type { RelationStore } from './relations.ports.ts';
import { PgRelations } from './relations.store.ts';

/** The relation lists (an entity's policies, identities, services, routers, posture checks). */
export const relationsWiring = (database: Database, bus: Bus) =>
  new RelationService(
    createReader<RelationStore>(database, (db) => new PgRelations(db)),
    new BusRelatedEntityDetails(bus),
  );
