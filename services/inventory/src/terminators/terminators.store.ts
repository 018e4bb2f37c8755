import {
  type Db,
  type LockOption,
  date,
  json,
  listRows,
  lockClause,
  queryRows,
  strOrNull,
  toListPage,
} from '@ziti/platform';
import { baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';
import type {
  DialTargets,
  DialTerminator,
  ListInput,
  ListPage,
  PeerData,
  Precedence,
  Terminator,
} from '../shared/model.domain.ts';
import { type Row, listOptions } from '../shared/store-helpers.store.ts';
import type { TerminatorStore } from './terminators.ports.ts';

/** Filterable fields of terminators, as the reference's stores publish them (ZITI-FACTS §3.5). */
export const terminatorQuery = defineQueryEntity({
  table: 'terminators',
  alias: 't',
  fields: {
    ...baseEntityFields('t'),
    binding: scalar('t.binding', 'string'),
    address: scalar('t.address', 'string'),
    instanceId: scalar('t.instance_id', 'string'),
    hostId: scalar('t.host_id', 'string'),
    cost: scalar('t.cost', 'number'),
    precedence: scalar('t.precedence', 'string'),
    service: scalar('t.service_id', 'string'),
    router: scalar('t.router_id', 'string'),
    'service.name': scalar((a) => `(select x.name from services x where x.id = ${a}.service_id)`, 'string'),
    'router.name': scalar((a) => `(select x.name from routers x where x.id = ${a}.router_id)`, 'string'),
  },
});

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

/** A terminator's dial fields and its router's presence (`t`: terminators, `p`: router_presence), named: prepared. */
const dialColumns = `t.id, t.router_id, t.binding, t.address, t.instance_id, t.cost, t.precedence, t.peer_data, t.host_id,
  t.created_at, coalesce(p.is_online, false) as router_online`;

function dialTerminatorFromRow(r: Row): DialTerminator {
  return {
    id: String(r.id),
    routerId: String(r.router_id),
    binding: String(r.binding),
    address: String(r.address),
    instanceId: String(r.instance_id ?? ''),
    cost: Number(r.cost ?? 0),
    precedence: r.precedence as Precedence,
    peerData: json<PeerData>(r.peer_data, {}),
    hostId: String(r.host_id ?? ''),
    routerOnline: Boolean(r.router_online),
    createdAt: date(r.created_at),
  };
}

export class PgTerminatorStore implements TerminatorStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Terminator | null> {
    const rows = await queryRows<Row>(this.db, `select * from terminators where id = $1${lockClause(options)}`, [id]);
    return rows[0] ? terminatorFromRow(rows[0]) : null;
  }

  async insert(t: Terminator, peerData: PeerData = {}): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `insert into terminators (id, service_id, router_id, binding, address, instance_id, instance_secret_hash, cost, precedence, host_id, tags, created_at, updated_at, peer_data)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14::jsonb)
       on conflict (id) do nothing
       returning id`,
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
        JSON.stringify(peerData),
      ],
    );
    return rows.length > 0;
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

  async deleteOfRouter(routerId: string, ids: string[]): Promise<Terminator[]> {
    if (ids.length === 0) return [];
    const rows = await queryRows<Row>(
      this.db,
      'delete from terminators where router_id = $1 and id = any($2::text[]) returning *',
      [routerId, ids],
    );
    return rows.map(terminatorFromRow).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async deleteOf(owner: { routerId: string } | { serviceId: string }): Promise<Terminator[]> {
    const [column, id] = 'routerId' in owner ? ['router_id', owner.routerId] : ['service_id', owner.serviceId];
    const rows = await queryRows<Row>(this.db, `delete from terminators where ${column} = $1 returning *`, [id]);
    return rows.map(terminatorFromRow);
  }

  async list(input: ListInput, serviceId?: string): Promise<ListPage<Terminator>> {
    const scope = serviceId !== undefined ? { sql: 't.service_id = $1', params: [serviceId] } : undefined;
    return toListPage(await listRows<Row>(this.db, terminatorQuery, input, listOptions(scope)), terminatorFromRow);
  }

  async dialTargets(serviceId: string): Promise<DialTargets> {
    // On every dial: one prepared statement, the service and its terminators (none: one row of the
    // service with nulls; no service: no row).
    const rows = await queryRows<Row>(
      this.db,
      `select s.id as service_id, s.name as service_name, s.terminator_strategy, s.encryption_required, ${dialColumns}
         from services s
         left join terminators t on t.service_id = s.id
         left join router_presence p on p.router_id = t.router_id
        where s.id = $1
        order by t.id collate "C"`,
      [serviceId],
      { prepare: true },
    );
    const first = rows[0];
    if (!first) return { service: null, terminators: [] };
    return {
      service: {
        id: String(first.service_id),
        name: String(first.service_name),
        terminatorStrategy: String(first.terminator_strategy),
        encryptionRequired: Boolean(first.encryption_required),
      },
      terminators: rows.filter((r) => r.id !== null && r.id !== undefined).map(dialTerminatorFromRow),
    };
  }

  async ofRouter(routerId: string): Promise<DialTerminator[]> {
    const rows = await queryRows<Row>(
      this.db,
      `select ${dialColumns} from terminators t left join router_presence p on p.router_id = t.router_id
        where t.router_id = $1 order by t.id collate "C"`,
      [routerId],
    );
    return rows.map(dialTerminatorFromRow);
  }
}
