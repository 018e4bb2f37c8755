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
import { baseEntityFields, defineQueryEntity, scalar, set } from '@ziti/zitiql';
import type { Config, ListInput, ListPage } from '../shared/model.domain.ts';
import { type Row, combine, listOptions } from '../shared/store-helpers.store.ts';
import type { ConfigStore } from './configs.ports.ts';

/**
 * Filterable fields of configs, as the reference's stores publish them (ZITI-FACTS §3.5). Not
 * `data.<key>`: the 1.1.9 binary answers INVALID_FILTER "unknown symbol 'data.port'" for it.
 */
export const configQuery = defineQueryEntity({
  table: 'configs',
  alias: 'c',
  fields: {
    ...baseEntityFields('c'),
    name: scalar('c.name', 'string'),
    type: scalar('c.config_type_id', 'string'),
    'type.name': scalar((a) => `(select x.name from config_types x where x.id = ${a}.config_type_id)`, 'string'),
    services: set((a) => `select x.service_id from service_configs x where x.config_id = ${a}.id`, 'string'),
  },
});

function configFromRow(r: Row): Config {
  return {
    id: String(r.id),
    name: String(r.name),
    configTypeId: String(r.config_type_id),
    data: json(r.data, {}),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgConfigStore implements ConfigStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Config | null> {
    const rows = await queryRows<Row>(this.db, `select * from configs where id = $1${lockClause(options)}`, [id]);
    return rows[0] ? configFromRow(rows[0]) : null;
  }

  async getMany(ids: string[]): Promise<Config[]> {
    if (ids.length === 0) return [];
    return (await queryRows<Row>(this.db, 'select * from configs where id = any($1::text[])', [ids])).map(
      configFromRow,
    );
  }

  private unique(c: Config) {
    return { configs_name_key: { field: 'name', store: 'configs', value: c.name } };
  }

  async insert(c: Config): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          'insert into configs (id, name, config_type_id, data, tags, created_at, updated_at) values ($1, $2, $3, $4::jsonb, $5::jsonb, $6, $7)',
          [c.id, c.name, c.configTypeId, JSON.stringify(c.data), JSON.stringify(c.tags), c.createdAt, c.updatedAt],
        ),
      this.unique(c),
    );
  }

  async update(c: Config): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          'update configs set name = $2, data = $3::jsonb, tags = $4::jsonb, updated_at = $5 where id = $1',
          [c.id, c.name, JSON.stringify(c.data), JSON.stringify(c.tags), c.updatedAt],
        ),
      this.unique(c),
    );
  }

  async delete(id: string): Promise<boolean> {
    return withForeignKeys(
      async () => (await queryRows(this.db, 'delete from configs where id = $1 returning id', [id])).length > 0,
      {
        identity_service_configs_config_fkey: () =>
          new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
            field: 'configs',
            reason: `config ${id} is in use by identity service configs`,
            value: id,
          }),
      },
    );
  }

  async list(input: ListInput, scope?: { configTypeId?: string; serviceId?: string }): Promise<ListPage<Config>> {
    const s = combine([
      scope?.configTypeId !== undefined ? { sql: 'c.config_type_id = $1', params: [scope.configTypeId] } : undefined,
      scope?.serviceId !== undefined
        ? {
            sql: 'c.id in (select x.config_id from service_configs x where x.service_id = $1)',
            params: [scope.serviceId],
          }
        : undefined,
    ]);
    return toListPage(await listRows<Row>(this.db, configQuery, input, listOptions(s)), configFromRow);
  }

  async listByType(configTypeId: string, after: string | undefined, limit: number): Promise<Config[]> {
    const rows = await queryRows<Row>(
      this.db,
      `select * from configs where config_type_id = $1 and ($2::text is null or id collate "C" > $2) order by id collate "C" limit $3`,
      [configTypeId, after ?? null, limit],
    );
    return rows.map(configFromRow);
  }

  async page(after: string | undefined, limit: number, ids?: string[]): Promise<Config[]> {
    const page = entityStatesPage({ type: 'config', after, limit, ids });
    return (await statesPageRows<Row>(this.db, { columns: '*', from: 'configs' }, page)).map(configFromRow);
  }
}
