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
  strOrNull,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import { arraySet, baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';
import type { ListInput, ListPage, NamedRef, RoleFilter, Router, RouterKind } from '../shared/model.domain.ts';
import { type Row, combine, listOptions, roleScope } from '../shared/store-helpers.store.ts';
import type { RouterStore } from './routers.ports.ts';

/** Whether the router is online now, from its presence (none: it never connected). */
const isOnline = scalar(
  (a) => `coalesce((select p.is_online from router_presence p where p.router_id = ${a}.id), false)`,
  'boolean',
);

/**
 * Filterable fields of routers, as the reference's stores publish them (ZITI-FACTS §3.5), and
 * whether each is online: `isOnline` as the detail names it, and the reference's symbols for it
 * (`connected` of every router; `online` of edge routers, added below).
 */
const routerFields = (alias: string) => ({
  ...baseEntityFields(alias),
  name: scalar(`${alias}.name`, 'string'),
  fingerprint: scalar(`${alias}.fingerprint`, 'string'),
  cost: scalar(`${alias}.cost`, 'number'),
  noTraversal: scalar(`${alias}.no_traversal`, 'boolean'),
  disabled: scalar(`${alias}.disabled`, 'boolean'),
  isVerified: scalar(`${alias}.is_verified`, 'boolean'),
  isOnline,
  connected: isOnline,
});

export const edgeRouterQuery = defineQueryEntity({
  table: 'routers',
  alias: 'r',
  fields: {
    ...routerFields('r'),
    roleAttributes: arraySet('r.role_attributes', 'string'),
    isTunnelerEnabled: scalar('r.is_tunneler_enabled', 'boolean'),
    online: isOnline,
  },
});

export const transitRouterQuery = defineQueryEntity({
  table: 'routers',
  alias: 'r',
  fields: routerFields('r'),
});

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

  async getMany(ids: string[], kind?: RouterKind): Promise<Router[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<Row>(
      this.db,
      'select * from routers where id = any($1::text[]) and ($2::text is null or kind = $2)',
      [[...new Set(ids)], kind ?? null],
    );
    return rows.map(routerFromRow);
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
