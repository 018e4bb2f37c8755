import { type Db, date, listRows, queryRows, toListPage } from '@ziti/platform';
import type { ListInput, ListPage, NamedEntity } from '../shared/model.domain.ts';
import type { IdentityTypeStore } from './identity-types.ports.ts';
import { identityTypeQuery } from '../shared/query-entities.store.ts';

type Row = Record<string, unknown>;

function identityTypeFromRow(r: Row): NamedEntity {
  return {
    id: String(r.id),
    name: String(r.name),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgIdentityTypeStore implements IdentityTypeStore {
  constructor(private readonly db: Db) {}

  async get(id: string): Promise<NamedEntity | null> {
    const [row] = await queryRows<Row>(
      this.db,
      'select id, name, created_at, updated_at from identity_types where id = $1',
      [id],
    );
    return row ? identityTypeFromRow(row) : null;
  }

  async list(input: ListInput): Promise<ListPage<NamedEntity>> {
    return toListPage(await listRows<Row>(this.db, identityTypeQuery, input), identityTypeFromRow);
  }

  async insertIfAbsent(t: NamedEntity): Promise<void> {
    await queryRows(
      this.db,
      `insert into identity_types (id, name, created_at, updated_at) values ($1, $2, $3, $4)
       on conflict do nothing`,
      [t.id, t.name, t.createdAt, t.updatedAt],
    );
  }
}
