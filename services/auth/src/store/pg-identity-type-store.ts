import { type Db, date, listRows, toListPage } from '@ziti/platform';
import { eq } from 'drizzle-orm';
import type { ListInput, ListPage, NamedEntity } from '../domain/model.ts';
import type { IdentityTypeStore } from '../domain/ports.ts';
import { identityTypeQuery } from './query-entities.ts';
import { identityTypes } from './schema.ts';

type Row = Record<string, unknown>;

export class PgIdentityTypeStore implements IdentityTypeStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<NamedEntity | null> {
    const rows = await this.db.select().from(identityTypes).where(eq(identityTypes.id, id));
    return rows[0] ?? null;
  }

  async list(input: ListInput): Promise<ListPage<NamedEntity>> {
    return toListPage(await listRows<Row>(this.db, identityTypeQuery, input), (r) => ({
      id: String(r.id),
      name: String(r.name),
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
    }));
  }

  async insertIfAbsent(t: NamedEntity): Promise<void> {
    await this.db.insert(identityTypes).values(t).onConflictDoNothing();
  }
}
