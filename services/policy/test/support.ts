import type {
  EdgeRouterState,
  EventDefinition,
  IdentityState,
  RouterPresenceState,
  ServiceState,
} from '@ziti/contracts';
import {
  type Database,
  type EventHandler,
  createLogger,
  inEventTransaction,
  migrate,
  openDatabase,
} from '@ziti/platform';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import { policyEngineWiring } from '../src/policies/policy-engine.wiring.ts';
import {
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from '../src/read-models/read-model-events.transport.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgIdentityServiceConfigsReadModel,
} from '../src/read-models/read-models.store.ts';

/** A policy database of its own on the local Postgres, migrated; `drop` closes and drops it. */
export async function policyTestDatabase(
  prefix: string,
  poolSize = 12,
): Promise<{ database: Database; drop: () => Promise<void> }> {
  const db = await createTestDatabase(prefix);
  const database = await openDatabase({ url: db.url, poolSize });
  await migrate(database, migrations);
  return {
    database,
    drop: async () => {
      await database.close();
      await db.drop();
    },
  };
}

export const fixedAt = '2026-01-01T00:00:00.000Z';

/** An identity as auth publishes it, with the given role attributes. */
export const identityFixture = (id: string, roleAttributes: string[]): IdentityState => ({
  id,
  name: `n-${id}`,
  typeId: 'User',
  isAdmin: false,
  isDefaultAdmin: false,
  roleAttributes,
  externalId: null,
  authPolicyId: 'default',
  disabled: false,
  disabledAt: null,
  disabledUntil: null,
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});

/** A service as inventory publishes it, with the given role attributes. */
export const serviceFixture = (id: string, roleAttributes: string[]): ServiceState => ({
  id,
  name: `n-${id}`,
  terminatorStrategy: 'smartrouting',
  roleAttributes,
  configs: [],
  encryptionRequired: true,
  maxIdleTimeMillis: 0,
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});

/** An edge router as inventory publishes it, with the given role attributes. */
export const routerFixture = (id: string, roleAttributes: string[]): EdgeRouterState => ({
  id,
  name: `n-${id}`,
  roleAttributes,
  isTunnelerEnabled: false,
  isVerified: true,
  disabled: false,
  noTraversal: false,
  cost: 0,
  fingerprint: null,
  hostname: '',
  supportedProtocols: {},
  appData: {},
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});

/** What inventory records of a router connected now (the fields fabric reported). */
export const presenceFixture = (id: string, over: Partial<RouterPresenceState> = {}): RouterPresenceState => ({
  id,
  kind: 'edge',
  isOnline: true,
  hostname: `${id}.example`,
  supportedProtocols: { tls: `tls://${id}.example:3022` },
  versionInfo: { version: 'v1.1.9', revision: 'f61924b', buildDate: '2024-08-01', os: 'linux', arch: 'amd64' },
  syncStatus: 'SYNC_DONE',
  connectionId: `conn-${id}`,
  connectedAt: fixedAt,
  changedAt: fixedAt,
  ...over,
});

/**
 * What inventory records once that router's connection is gone: offline, no hostname or protocols,
 * the last version info and the sync status fabric reported last (inventory's `presenceFromReport`).
 */
export const offlinePresenceFixture = (id: string, over: Partial<RouterPresenceState> = {}): RouterPresenceState =>
  presenceFixture(id, {
    isOnline: false,
    hostname: '',
    supportedProtocols: {},
    syncStatus: 'SYNC_DISCONNECTED',
    ...over,
  });

/**
 * policy's engine on `database` with its consumers' handlers: `deliver` applies an owner's event as
 * the consumer does (its handler, in a transaction of its own), at the next position of a counter
 * shared by every source unless one is given.
 */
export function policyBed(database: Database) {
  const engine = policyEngineWiring(database, undefined);
  const logger = createLogger('policy-test', 'silent');
  const subscriptions = [
    authReadModelSubscription(engine.identities, engine.derive, logger),
    inventoryReadModelSubscription(
      {
        services: engine.services,
        edgeRouters: engine.edgeRouters,
        configs: (db) => new PgConfigReadModel(db),
        configTypes: (db) => new PgConfigTypeReadModel(db),
        overrides: (db) => new PgIdentityServiceConfigsReadModel(db),
        presence: engine.routerPresence,
      },
      engine.derive,
      logger,
    ),
  ];
  const handlers = new Map<string, EventHandler>();
  for (const sub of subscriptions) for (const h of sub.handlers) handlers.set(h.type, h);
  let position = 0;
  const deliver = async <D extends { id: string }>(
    def: EventDefinition,
    source: 'auth' | 'inventory',
    data: D,
    at: number = ++position,
  ): Promise<number> => {
    position = Math.max(position, at);
    await inEventTransaction(database, 'policy', undefined, (tx, events) =>
      handlers
        .get(def.type)!
        .handle(
          tx,
          { id: `${source}:${at}`, type: def.type, version: def.version, source, sequence: at, occurredAt: '', data },
          events,
        ),
    );
    return at;
  };
  return { engine, subscriptions, deliver, nextPosition: () => ++position };
}
