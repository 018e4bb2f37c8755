import type { AuditRecordState } from '@ziti/contracts';
import { type Db, type ListInput, type ListPage, date, json, listRows, queryRows, toListPage } from '@ziti/platform';
import { defineQueryEntity, scalar } from '@ziti/zitiql';
import type { AuditRecordStore } from './records.ports.ts';

/** The fields an operator filters and sorts the trail by (ZitiQL), over the records' columns. */
export const auditRecordQuery = defineQueryEntity({
  table: 'audit_records',
  alias: 'r',
  fields: {
    id: scalar('r.id', 'string'),
    at: scalar('r.at', 'datetime'),
    category: scalar('r.category', 'string'),
    operation: scalar('r.operation', 'string'),
    method: scalar('r.method', 'string'),
    requestId: scalar('r.request_id', 'string'),
    remoteAddress: scalar('r.remote_address', 'string'),
    actorId: scalar('r.actor_id', 'string'),
    actorName: scalar('r.actor_name', 'string'),
    apiSessionId: scalar('r.api_session_id', 'string'),
    entityType: scalar('r.entity_type', 'string'),
    entityId: scalar('r.entity_id', 'string'),
    entityName: scalar('r.entity_name', 'string'),
    action: scalar('r.action', 'string'),
    authMethod: scalar('r.auth_method', 'string'),
    reason: scalar('r.reason', 'string'),
    eventId: scalar('r.event_id', 'string'),
  },
});

const columns = `r.id, r.event_id, r.at, r.category, r.operation, r.method, r.request_id, r.remote_address, r.actor_id,
  r.actor_name, r.api_session_id, r.entity_type, r.entity_id, r.entity_name, r.action, r.changes, r.auth_method, r.reason`;

type Row = Record<string, unknown>;

const text = (v: unknown): string | undefined => (v === null || v === undefined ? undefined : String(v));

function recordFromRow(r: Row): AuditRecordState {
  const optional = (key: keyof AuditRecordState, v: unknown) => {
    const t = text(v);
    return t === undefined ? {} : { [key]: t };
  };
  const changes =
    r.changes === null || r.changes === undefined ? undefined : json<AuditRecordState['changes']>(r.changes);
  return {
    id: String(r.id),
    at: date(r.at).toISOString(),
    category: String(r.category) as AuditRecordState['category'],
    operation: String(r.operation),
    ...optional('method', r.method),
    requestId: String(r.request_id),
    ...optional('remoteAddress', r.remote_address),
    ...optional('actorId', r.actor_id),
    ...optional('actorName', r.actor_name),
    ...optional('apiSessionId', r.api_session_id),
    ...optional('entityType', r.entity_type),
    ...optional('entityId', r.entity_id),
    ...optional('entityName', r.entity_name),
    action: String(r.action),
    ...(changes ? { changes } : {}),
    ...optional('authMethod', r.auth_method),
    ...optional('reason', r.reason),
    eventId: String(r.event_id),
  };
}

export class PgAuditRecordStore implements AuditRecordStore {
  constructor(private readonly db: Db) {}

  async insert(record: AuditRecordState): Promise<boolean> {
    return (await this.insertMany([record])).length > 0;
  }

  /**
   * One multi-row insert (arrays unnested, whatever the count): every record whose source event has
   * none yet. Returns the event ids of the rows it stored.
   */
  async insertMany(records: AuditRecordState[]): Promise<string[]> {
    if (records.length === 0) return [];
    const col = <T>(f: (r: AuditRecordState) => T | undefined): (T | null)[] => records.map((r) => f(r) ?? null);
    const rows = await queryRows<{ event_id: string }>(
      this.db,
      `insert into audit_records (id, event_id, at, category, operation, method, request_id, remote_address,
         actor_id, actor_name, api_session_id, entity_type, entity_id, entity_name, action, changes, auth_method, reason)
       select r.id, r.event_id, r.at, r.category, r.operation, r.method, r.request_id, r.remote_address,
              r.actor_id, r.actor_name, r.api_session_id, r.entity_type, r.entity_id, r.entity_name, r.action,
              r.changes::jsonb, r.auth_method, r.reason
         from unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[],
                     $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[],
                     $15::text[], $16::text[], $17::text[], $18::text[])
              with ordinality as r(id, event_id, at, category, operation, method, request_id, remote_address,
                actor_id, actor_name, api_session_id, entity_type, entity_id, entity_name, action, changes,
                auth_method, reason, ord)
        order by r.ord
       on conflict (event_id) do nothing
       returning event_id`,
      [
        col((r) => r.id),
        col((r) => r.eventId),
        col((r) => r.at),
        col((r) => r.category),
        col((r) => r.operation),
        col((r) => r.method),
        col((r) => r.requestId),
        col((r) => r.remoteAddress),
        col((r) => r.actorId),
        col((r) => r.actorName),
        col((r) => r.apiSessionId),
        col((r) => r.entityType),
        col((r) => r.entityId),
        col((r) => r.entityName),
        col((r) => r.action),
        col((r) => (r.changes === undefined ? undefined : JSON.stringify(r.changes))),
        col((r) => r.authMethod),
        col((r) => r.reason),
      ],
      { prepare: true },
    );
    return rows.map((r) => String(r.event_id));
  }

  async list(input: ListInput): Promise<ListPage<AuditRecordState>> {
    return toListPage(await listRows<Row>(this.db, auditRecordQuery, input, { columns }), recordFromRow);
  }
}
