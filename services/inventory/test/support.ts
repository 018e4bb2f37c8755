import {
  type Database,
  type Db,
  createUnitOfWork,
  migrate,
  openDatabase,
  queryRows,
  readOnlyEventSink,
} from '@ziti/platform';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import type { IdentityDirectory } from '../src/identity-service-configs/identity-service-configs.ports.ts';
import { bindInventoryStores } from '../src/shared/core.wiring.ts';
import type { InventoryStores, UnitOfWork } from '../src/shared/stores.ports.ts';

/** inventory's stores bound to a transaction, as app.ts binds them (its core wiring's binding). */
export const bindStores = bindInventoryStores;

/** inventory's stores on a fresh, migrated database: real Postgres, or PGlite in memory. */
export async function inventoryDatabase(kind: 'postgres' | 'pglite' = 'postgres'): Promise<{
  database: Database;
  work: UnitOfWork;
  /** The stores of a transaction the caller opened (read only). */
  read: (tx: Db) => InventoryStores;
  drop: () => Promise<void>;
}> {
  let drop = async () => undefined as void;
  let database: Database;
  if (kind === 'postgres') {
    const db = await createTestDatabase('inv');
    database = await openDatabase({ url: db.url, poolSize: 4 });
    drop = async () => {
      await database.close();
      await db.drop();
    };
  } else {
    database = await openDatabase({ pgliteMemory: true });
    drop = async () => database.close();
  }
  await migrate(database, migrations);
  const work = createUnitOfWork<InventoryStores>(database, undefined, 'inventory', bindStores);
  return { database, work, read: (tx) => bindStores(tx, readOnlyEventSink), drop };
}

/** The events written to the outbox, oldest first. */
export async function outboxEvents(database: Database): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  const rows = await queryRows<{ type: string; payload: unknown }>(
    database.db,
    'select type, payload from outbox order by id',
  );
  return rows.map((r) => ({
    type: r.type,
    payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>,
  }));
}

/** Identities auth would know: a fixed set. */
export class FakeIdentityDirectory implements IdentityDirectory {
  constructor(readonly ids = new Set<string>()) {}
  async existing(ids: string[]): Promise<Set<string>> {
    return new Set(ids.filter((id) => this.ids.has(id)));
  }
}
