import { type Database, type Db, createReader } from '@ziti/platform';
import { RoleAttributeService } from './role-attributes.domain.ts';
import type { RoleAttributeStores } from './role-attributes.ports.ts';

/** The role-attribute lists (`/identity-role-attributes` and the like), from the read models. */
export const roleAttributesWiring = (
  database: Database,
  readModels: { [K in keyof RoleAttributeStores]: (db: Db) => RoleAttributeStores[K] },
) =>
  new RoleAttributeService(
    createReader<RoleAttributeStores>(database, (db) => ({
      identities: readModels.identities(db),
      services: readModels.services(db),
      edgeRouters: readModels.edgeRouters(db),
    })),
  );
