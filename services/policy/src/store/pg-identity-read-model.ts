import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
import type { Db } from '@ziti/platform';
import { PgEntityReadModel } from './pg-read-model.ts';

export { roleAttributeQuery } from './pg-read-model.ts';

/** policy's copy of auth's identities. */
export class PgIdentityReadModel extends PgEntityReadModel<IdentityState> {
  constructor(db: Db) {
    super(db, {
      table: 'identities',
      columns: [
        { name: 'name', value: (s) => s.name },
        { name: 'type_id', value: (s) => s.typeId },
        { name: 'is_admin', value: (s) => s.isAdmin },
        { name: 'role_attributes', cast: 'text[]', value: (s) => s.roleAttributes },
      ],
    });
  }
}

/** policy's copy of inventory's services. */
export class PgServiceReadModel extends PgEntityReadModel<ServiceState> {
  constructor(db: Db) {
    super(db, {
      table: 'services',
      columns: [
        { name: 'name', value: (s) => s.name },
        { name: 'role_attributes', cast: 'text[]', value: (s) => s.roleAttributes },
      ],
    });
  }
}

/** policy's copy of inventory's edge routers. */
export class PgEdgeRouterReadModel extends PgEntityReadModel<EdgeRouterState> {
  constructor(db: Db) {
    super(db, {
      table: 'edge_routers',
      columns: [
        { name: 'name', value: (s) => s.name },
        { name: 'role_attributes', cast: 'text[]', value: (s) => s.roleAttributes },
        { name: 'is_tunneler_enabled', value: (s) => s.isTunnelerEnabled },
        { name: 'is_verified', value: (s) => s.isVerified },
      ],
    });
  }
}
