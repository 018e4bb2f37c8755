import { ApiError } from '@ziti/contracts';
import {
  type Db,
  type LockOption,
  date,
  entityStatesPage,
  json,
  listRows,
  lockClause,
  queryRows,
  statesPageRows,
  withForeignKeys,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { baseEntityFields, defineQueryEntity, map, scalar } from '@ziti/zitiql';
import type { ConfigType, ListInput, ListPage } from '../shared/model.domain.ts';
import type { Row } from '../shared/store-helpers.store.ts';
import type { ConfigTypeStore } from './config-types.ports.ts';

/** Filterable fields of config types, as the reference's stores publish them (ZITI-FACTS §3.5). */
export const configTypeQuery = defineQueryEntity({
  table: 'config_types',
  alias: 't',
  fields: { ...baseEntityFields('t'), name: scalar('t.name', 'string'), schema: map('t.schema') },
});

function configTypeFromRow(r: Row): ConfigType {
  return {
    id: String(r.id),
    name: String(r.name),
    schema: json(r.schema, {}),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgConfigTypeStore implements ConfigTypeStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<ConfigType | null> {
    const rows = await queryRows<Row>(this.db, `select * from config_types where id = $1${lockClause(options)}`, [id]);
    return rows[0] ? configTypeFromRow(rows[0]) : null;
  }

  async findByName(name: string): Promise<ConfigType | null> {
    const rows = await queryRows<Row>(this.db, 'select * from config_types where name = $1', [name]);
    return rows[0] ? configTypeFromRow(rows[0]) : null;
  }

  async getMany(ids: string[]): Promise<ConfigType[]> {
    if (ids.length === 0) return [];
    return (await queryRows<Row>(this.db, 'select * from config_types where id = any($1::text[])', [ids])).map(
      configTypeFromRow,
    );
  }

  private unique(t: ConfigType) {
    return { config_types_name_key: { field: 'name', store: 'configTypes', value: t.name } };
  }

  async insert(t: ConfigType): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          'insert into config_types (id, name, schema, tags, created_at, updated_at) values ($1, $2, $3::jsonb, $4::jsonb, $5, $6)',
          [t.id, t.name, JSON.stringify(t.schema), JSON.stringify(t.tags), t.createdAt, t.updatedAt],
        ),
      this.unique(t),
    );
  }

  async update(t: ConfigType): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          'update config_types set name = $2, schema = $3::jsonb, tags = $4::jsonb, updated_at = $5 where id = $1',
          [t.id, t.name, JSON.stringify(t.schema), JSON.stringify(t.tags), t.updatedAt],
        ),
      this.unique(t),
    );
  }

  async delete(id: string): Promise<boolean> {
    return withForeignKeys(
      async () => (await queryRows(this.db, 'delete from config_types where id = $1 returning id', [id])).length > 0,
      {
        configs_config_type_fkey: () =>
          new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
            field: 'type',
            reason: `entity type configTypes referenced by configs`,
            value: id,
          }),
      },
    );
  }

  async list(input: ListInput): Promise<ListPage<ConfigType>> {
    return toListPage(await listRows<Row>(this.db, configTypeQuery, input), configTypeFromRow);
  }

  async configIds(id: string, limit: number): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select id from configs where config_type_id = $1 order by id collate "C" limit $2',
      [id, limit],
    );
    return rows.map((r) => r.id);
  }

  async page(after: string | undefined, limit: number, ids?: string[]): Promise<ConfigType[]> {
    const page = entityStatesPage({ type: 'configType', after, limit, ids });
    return (await statesPageRows<Row>(this.db, { columns: '*', from: 'config_types' }, page)).map(configTypeFromRow);
  }
}
