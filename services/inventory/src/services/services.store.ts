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
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { arraySet, baseEntityFields, defineQueryEntity, scalar, set } from '@ziti/zitiql';
import type { ListInput, ListPage, RoleFilter, Service } from '../shared/model.domain.ts';
import { type Row, combine, listOptions, roleScope } from '../shared/store-helpers.store.ts';
import type { ServiceStore } from './services.ports.ts';

/** Filterable fields of services, as the reference's stores publish them (ZITI-FACTS §3.5). */
export const serviceQuery = defineQueryEntity({
  table: 'services',
  alias: 's',
  fields: {
    ...baseEntityFields('s'),
    name: scalar('s.name', 'string'),
    terminatorStrategy: scalar('s.terminator_strategy', 'string'),
    roleAttributes: arraySet('s.role_attributes', 'string'),
    configs: set((a) => `select x.config_id from service_configs x where x.service_id = ${a}.id`, 'string'),
  },
});

const serviceColumns = `s.*, coalesce((select array_agg(x.config_id order by x.position) from service_configs x where x.service_id = s.id), '{}') as configs`;

function serviceFromRow(r: Row): Service {
  return {
    id: String(r.id),
    name: String(r.name),
    terminatorStrategy: String(r.terminator_strategy),
    roleAttributes: (r.role_attributes as string[] | null) ?? [],
    configs: (r.configs as string[] | null) ?? [],
    encryptionRequired: Boolean(r.encryption_required),
    maxIdleTimeMillis: Number(r.max_idle_time_millis ?? 0),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgServiceStore implements ServiceStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Service | null> {
    const rows = await queryRows<Row>(
      this.db,
      `select ${serviceColumns} from services s where s.id = $1${lockClause(options)}`,
      [id],
    );
    return rows[0] ? serviceFromRow(rows[0]) : null;
  }

  async getMany(ids: string[]): Promise<Service[]> {
    if (ids.length === 0) return [];
    return (
      await queryRows<Row>(
        this.db,
        `select ${serviceColumns} from services s where s.id = any($1::text[]) order by s.id collate "C"`,
        [ids],
      )
    ).map(serviceFromRow);
  }

  private unique(s: Service) {
    return { services_name_key: { field: 'name', store: 'services', value: s.name } };
  }

  private async writeConfigs(s: Service): Promise<void> {
    await queryRows(this.db, 'delete from service_configs where service_id = $1', [s.id]);
    if (s.configs.length > 0) {
      await queryRows(
        this.db,
        'insert into service_configs (service_id, config_id, position) select $1, c, o::int from unnest($2::text[]) with ordinality as u(c, o)',
        [s.id, s.configs],
      );
    }
  }

  async insert(s: Service): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `insert into services (id, name, terminator_strategy, role_attributes, encryption_required, max_idle_time_millis, tags, created_at, updated_at)
           values ($1, $2, $3, $4::text[], $5, $6, $7::jsonb, $8, $9)`,
          [
            s.id,
            s.name,
            s.terminatorStrategy,
            s.roleAttributes,
            s.encryptionRequired,
            s.maxIdleTimeMillis,
            JSON.stringify(s.tags),
            s.createdAt,
            s.updatedAt,
          ],
        ),
      this.unique(s),
    );
    await this.writeConfigs(s);
  }

  async update(s: Service): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `update services set name = $2, terminator_strategy = $3, role_attributes = $4::text[], max_idle_time_millis = $5, tags = $6::jsonb, updated_at = $7,
             encryption_required = $8
           where id = $1`,
          [
            s.id,
            s.name,
            s.terminatorStrategy,
            s.roleAttributes,
            s.maxIdleTimeMillis,
            JSON.stringify(s.tags),
            s.updatedAt,
            s.encryptionRequired,
          ],
        ),
      this.unique(s),
    );
    await this.writeConfigs(s);
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from services where id = $1 returning id', [id])).length > 0;
  }

  async list(input: ListInput, scope?: { roleFilter?: RoleFilter; configId?: string }): Promise<ListPage<Service>> {
    const s = combine([
      roleScope(scope?.roleFilter, 's'),
      scope?.configId !== undefined
        ? {
            sql: 's.id in (select x.service_id from service_configs x where x.config_id = $1)',
            params: [scope.configId],
          }
        : undefined,
    ]);
    return toListPage(
      await listRows<Row>(this.db, serviceQuery, input, { ...listOptions(s), columns: serviceColumns }),
      serviceFromRow,
    );
  }

  async idsUsingConfig(configId: string): Promise<string[]> {
    return (
      await queryRows<{ id: string }>(this.db, 'select service_id as id from service_configs where config_id = $1', [
        configId,
      ])
    ).map((r) => r.id);
  }

  async page(after: string | undefined, limit: number, ids?: string[]): Promise<Service[]> {
    const page = entityStatesPage({ type: 'service', after, limit, ids }, 's.id');
    const source = { columns: serviceColumns, from: 'services s', key: 's.id' };
    return (await statesPageRows<Row>(this.db, source, page)).map(serviceFromRow);
  }
}
