import type {
  ConfigState,
  ConfigTypeState,
  EdgeRouterState,
  IdentityServiceConfigsState,
  IdentityState,
  RouterPresenceState,
  ServiceState,
} from '@ziti/contracts';
import type { Db } from '@ziti/platform';
import { PgEntityReadModel } from './entity-read-model.store.ts';

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
      // Links and access read these columns only: a login's envInfo or a tag derives nothing.
      derivedFromColumns: true,
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

/** policy's copy of inventory's configs (the data service lists show per config type). */
export class PgConfigReadModel extends PgEntityReadModel<ConfigState> {
  constructor(db: Db) {
    super(db, {
      table: 'configs',
      columns: [
        { name: 'name', value: (s) => s.name },
        { name: 'config_type_id', value: (s) => s.configTypeId },
      ],
    });
  }
}

/** policy's copy of inventory's config types (a service list's `config` keys are their names). */
export class PgConfigTypeReadModel extends PgEntityReadModel<ConfigTypeState> {
  constructor(db: Db) {
    super(db, { table: 'config_types', columns: [{ name: 'name', value: (s) => s.name }] });
  }
}

/** policy's copy of each identity's service config overrides (one row per identity). */
export class PgIdentityServiceConfigsReadModel extends PgEntityReadModel<IdentityServiceConfigsState> {
  constructor(db: Db) {
    super(db, { table: 'identity_service_configs', columns: [] });
  }
}

/**
 * policy's copy of inventory's record of router presence (one row per router that ever reported a
 * connection): `is_online` beside the state, for the reads that sort routers connected first.
 */
export class PgRouterPresenceReadModel extends PgEntityReadModel<RouterPresenceState> {
  constructor(db: Db) {
    super(db, { table: 'router_presence', columns: [{ name: 'is_online', value: (s) => s.isOnline }] });
  }
}
