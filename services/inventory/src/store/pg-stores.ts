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
  roleFilterScope,
  statesPageRows,
  strOrNull,
  withForeignKeys,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import type {
  Config,
  ConfigType,
  IdentityServiceConfig,
  ListInput,
  ListPage,
  NamedRef,
  RoleFilter,
  Router,
  RouterKind,
  Service,
  Terminator,
} from '../domain/model.ts';
import type {
  ConfigStore,
  ConfigTypeStore,
  IdentityServiceConfigStore,
  RouterStore,
  SeedStore,
  ServiceStore,
  TerminatorStore,
} from '../domain/ports.ts';
import {
  configQuery,
  configTypeQuery,
  edgeRouterQuery,
  serviceQuery,
  terminatorQuery,
  transitRouterQuery,
} from './query-entities.ts';

type Row = Record<string, unknown>;

function roleScope(filter: RoleFilter | undefined, alias: string): { sql: string; params: unknown[] } | undefined {
  if (!filter || filter.roles.length === 0) return undefined;
  return roleFilterScope(filter, `${alias}.role_attributes`, `${alias}.id`);
}

/** ANDs scopes written with their own `$1…` numbering into one. */
function combine(
  scopes: ({ sql: string; params: unknown[] } | undefined)[],
): { sql: string; params: unknown[] } | undefined {
  const present = scopes.filter((s): s is { sql: string; params: unknown[] } => s !== undefined);
  if (present.length === 0) return undefined;
  const params: unknown[] = [];
  const parts = present.map((s) => {
    const offset = params.length;
    params.push(...s.params);
    return `(${s.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  return { sql: parts.join(' and '), params };
}

const listOptions = (scope: { sql: string; params: unknown[] } | undefined) => (scope ? { scope } : {});

// ---------------------------------------------------------------------------------------------

export class PgSeedStore implements SeedStore {
  constructor(private readonly db: Db) {}

  async claim(name: string): Promise<boolean> {
    return (
      (await queryRows(this.db, 'insert into seeds (name) values ($1) on conflict do nothing returning name', [name]))
        .length > 0
    );
  }
}

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

// ---------------------------------------------------------------------------------------------

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
          `update services set name = $2, terminator_strategy = $3, role_attributes = $4::text[], max_idle_time_millis = $5, tags = $6::jsonb, updated_at = $7
           where id = $1`,
          [
            s.id,
            s.name,
            s.terminatorStrategy,
            s.roleAttributes,
            s.maxIdleTimeMillis,
            JSON.stringify(s.tags),
            s.updatedAt,
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

// ---------------------------------------------------------------------------------------------

function routerFromRow(r: Row): Router {
  return {
    id: String(r.id),
    kind: r.kind as RouterKind,
    name: String(r.name),
    cost: Number(r.cost ?? 0),
    noTraversal: Boolean(r.no_traversal),
    disabled: Boolean(r.disabled),
    isVerified: Boolean(r.is_verified),
    isTunnelerEnabled: Boolean(r.is_tunneler_enabled),
    fingerprint: strOrNull(r.fingerprint),
    certPem: strOrNull(r.cert_pem),
    unverifiedFingerprint: strOrNull(r.unverified_fingerprint),
    unverifiedCertPem: strOrNull(r.unverified_cert_pem),
    roleAttributes: (r.role_attributes as string[] | null) ?? [],
    appData: json(r.app_data, {}),
    hostname: String(r.hostname ?? ''),
    supportedProtocols: json(r.supported_protocols, {}),
    versionInfo: json(r.version_info, null),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

function routerParams(r: Router): unknown[] {
  return [
    r.id,
    r.kind,
    r.name,
    r.cost,
    r.noTraversal,
    r.disabled,
    r.isVerified,
    r.isTunnelerEnabled,
    r.fingerprint,
    r.certPem,
    r.unverifiedFingerprint,
    r.unverifiedCertPem,
    r.roleAttributes,
    JSON.stringify(r.appData),
    r.hostname,
    JSON.stringify(r.supportedProtocols),
    r.versionInfo === null ? null : JSON.stringify(r.versionInfo),
    JSON.stringify(r.tags),
    r.createdAt,
    r.updatedAt,
  ];
}

const routerColumnList = `id, kind, name, cost, no_traversal, disabled, is_verified, is_tunneler_enabled, fingerprint, cert_pem,
  unverified_fingerprint, unverified_cert_pem, role_attributes, app_data, hostname, supported_protocols, version_info,
  tags, created_at, updated_at`;

export class PgRouterStore implements RouterStore {
  constructor(private readonly db: Db) {}

  async get(id: string, kind?: RouterKind, options: LockOption = {}): Promise<Router | null> {
    const rows = await queryRows<Row>(
      this.db,
      `select * from routers where id = $1 and ($2::text is null or kind = $2)${lockClause(options)}`,
      [id, kind ?? null],
    );
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  async findByFingerprint(fingerprint: string): Promise<Router | null> {
    const rows = await queryRows<Row>(this.db, 'select * from routers where fingerprint = $1', [fingerprint]);
    return rows[0] ? routerFromRow(rows[0]) : null;
  }

  private unique(r: Router) {
    return {
      routers_name_key: { field: 'name', store: r.kind === 'edge' ? 'edgeRouters' : 'routers', value: r.name },
      routers_fingerprint_key: {
        field: 'fingerprint',
        store: 'routers',
        value: r.fingerprint,
        error: (v: unknown) =>
          new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint: v } }),
      },
    };
  }

  async insert(r: Router): Promise<void> {
    const params = routerParams(r);
    const placeholders = params.map((_, i) => {
      const n = `$${i + 1}`;
      if (i === 12) return `${n}::text[]`;
      if ([13, 15, 16, 17].includes(i)) return `${n}::jsonb`;
      return n;
    });
    await withUniqueFields(
      () => queryRows(this.db, `insert into routers (${routerColumnList}) values (${placeholders.join(', ')})`, params),
      this.unique(r),
    );
  }

  async update(r: Router): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `update routers set name = $3, cost = $4, no_traversal = $5, disabled = $6, is_verified = $7, is_tunneler_enabled = $8,
             fingerprint = $9, cert_pem = $10, unverified_fingerprint = $11, unverified_cert_pem = $12, role_attributes = $13::text[],
             app_data = $14::jsonb, hostname = $15, supported_protocols = $16::jsonb, version_info = $17::jsonb, tags = $18::jsonb,
             updated_at = $19
           where id = $1 and kind = $2`,
          // Every column but created_at, which never changes.
          routerParams(r).filter((_, i) => i !== 18),
        ),
      this.unique(r),
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from routers where id = $1 returning id', [id])).length > 0;
  }

  async list(kind: RouterKind | undefined, input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Router>> {
    const s = combine([
      kind ? { sql: 'r.kind = $1', params: [kind] } : undefined,
      kind === 'edge' ? roleScope(roleFilter, 'r') : undefined,
    ]);
    return toListPage(
      await listRows<Row>(this.db, kind === 'edge' ? edgeRouterQuery : transitRouterQuery, input, listOptions(s)),
      routerFromRow,
    );
  }

  async names(ids: string[]): Promise<NamedRef[]> {
    if (ids.length === 0) return [];
    return queryRows<NamedRef>(this.db, 'select id, name from routers where id = any($1::text[])', [ids]);
  }

  async page(kind: RouterKind, after: string | undefined, limit: number, ids?: string[]): Promise<Router[]> {
    const page = entityStatesPage({ type: 'edgeRouter', after, limit, ids });
    const source = { columns: '*', from: 'routers', scope: { sql: 'kind = $1', params: [kind] } };
    return (await statesPageRows<Row>(this.db, source, page)).map(routerFromRow);
  }
}

// ---------------------------------------------------------------------------------------------

function terminatorFromRow(r: Row): Terminator {
  return {
    id: String(r.id),
    serviceId: String(r.service_id),
    routerId: String(r.router_id),
    binding: String(r.binding),
    address: String(r.address),
    instanceId: String(r.instance_id ?? ''),
    instanceSecretHash: strOrNull(r.instance_secret_hash),
    cost: Number(r.cost ?? 0),
    precedence: r.precedence as Terminator['precedence'],
    hostId: String(r.host_id ?? ''),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgTerminatorStore implements TerminatorStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Terminator | null> {
    const rows = await queryRows<Row>(this.db, `select * from terminators where id = $1${lockClause(options)}`, [id]);
    return rows[0] ? terminatorFromRow(rows[0]) : null;
  }

  async insert(t: Terminator): Promise<void> {
    await queryRows(
      this.db,
      `insert into terminators (id, service_id, router_id, binding, address, instance_id, instance_secret_hash, cost, precedence, host_id, tags, created_at, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13)`,
      [
        t.id,
        t.serviceId,
        t.routerId,
        t.binding,
        t.address,
        t.instanceId,
        t.instanceSecretHash,
        t.cost,
        t.precedence,
        t.hostId,
        JSON.stringify(t.tags),
        t.createdAt,
        t.updatedAt,
      ],
    );
  }

  async update(t: Terminator): Promise<void> {
    await queryRows(
      this.db,
      `update terminators set service_id = $2, router_id = $3, binding = $4, address = $5, cost = $6, precedence = $7, tags = $8::jsonb, updated_at = $9
       where id = $1`,
      [t.id, t.serviceId, t.routerId, t.binding, t.address, t.cost, t.precedence, JSON.stringify(t.tags), t.updatedAt],
    );
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from terminators where id = $1 returning id', [id])).length > 0;
  }

  async list(input: ListInput, serviceId?: string): Promise<ListPage<Terminator>> {
    const scope = serviceId !== undefined ? { sql: 't.service_id = $1', params: [serviceId] } : undefined;
    return toListPage(await listRows<Row>(this.db, terminatorQuery, input, listOptions(scope)), terminatorFromRow);
  }
}

// ---------------------------------------------------------------------------------------------

function identityServiceConfigFromRow(r: Row): IdentityServiceConfig {
  return {
    identityId: String(r.identity_id),
    serviceId: String(r.service_id),
    configId: String(r.config_id),
    configTypeId: String(r.config_type_id),
  };
}

export class PgIdentityServiceConfigStore implements IdentityServiceConfigStore {
  constructor(private readonly db: Db) {}

  async listByIdentity(identityId: string): Promise<IdentityServiceConfig[]> {
    const rows = await queryRows<Row>(
      this.db,
      'select * from identity_service_configs where identity_id = $1 order by service_id collate "C", config_type_id collate "C"',
      [identityId],
    );
    return rows.map(identityServiceConfigFromRow);
  }

  async listByIdentities(identityIds: string[]): Promise<IdentityServiceConfig[]> {
    if (identityIds.length === 0) return [];
    const rows = await queryRows<Row>(
      this.db,
      `select * from identity_service_configs where identity_id = any($1::text[])
        order by identity_id collate "C", service_id collate "C", config_id collate "C"`,
      [identityIds],
    );
    return rows.map(identityServiceConfigFromRow);
  }

  async identityIdsByService(serviceId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select distinct identity_id collate "C" as id from identity_service_configs where service_id = $1 order by 1',
      [serviceId],
    );
    return rows.map((r) => r.id);
  }

  async upsert(l: IdentityServiceConfig): Promise<void> {
    await queryRows(
      this.db,
      `insert into identity_service_configs (identity_id, service_id, config_type_id, config_id) values ($1, $2, $3, $4)
       on conflict (identity_id, service_id, config_type_id) do update set config_id = excluded.config_id`,
      [l.identityId, l.serviceId, l.configTypeId, l.configId],
    );
  }

  async delete(identityId: string, serviceId: string, configId: string): Promise<number> {
    return (
      await queryRows(
        this.db,
        'delete from identity_service_configs where identity_id = $1 and service_id = $2 and config_id = $3 returning 1',
        [identityId, serviceId, configId],
      )
    ).length;
  }

  async deleteByIdentity(identityId: string): Promise<number> {
    return (
      await queryRows(this.db, 'delete from identity_service_configs where identity_id = $1 returning 1', [identityId])
    ).length;
  }

  /** The identities with overrides, one page of them: what `identityServiceConfigs` states are built from. */
  async identityIds(after: string | undefined, limit: number, ids?: string[]): Promise<string[]> {
    const page = entityStatesPage({ type: 'identityServiceConfigs', after, limit, ids }, 'identity_id');
    const source = {
      columns: 'distinct identity_id collate "C" as id',
      from: 'identity_service_configs',
      key: 'identity_id',
    };
    return (await statesPageRows<{ id: string }>(this.db, source, page)).map((r) => r.id);
  }

  async countByConfig(configId: string): Promise<number> {
    const rows = await queryRows<{ n: number }>(
      this.db,
      'select count(*)::int as n from identity_service_configs where config_id = $1',
      [configId],
    );
    return rows[0]?.n ?? 0;
  }
}
