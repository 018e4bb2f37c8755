import { type Bus, type Database, createReader } from '@ziti/platform';
import { ClientTerminators } from './client-terminators.domain.ts';
import { PgServiceVisibility } from './client-terminators.store.ts';
import { BusTerminatorCatalog } from './inventory-terminators.adapter.ts';

/** The client's terminators of a service: visibility here, the terminators from inventory. */
export const clientTerminatorsWiring = (database: Database, bus: Bus) =>
  new ClientTerminators(
    createReader(database, (db) => new PgServiceVisibility(db)),
    new BusTerminatorCatalog(bus),
  );
