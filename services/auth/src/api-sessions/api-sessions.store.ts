import { type Db, type LiveApiSession, listRows } from '@ziti/platform';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { ApiSessionQuery } from './api-sessions.ports.ts';
import { apiSessionQuery } from '../shared/query-entities.store.ts';

/**
 * API sessions live in Redis, but lists must filter, sort and page with the one ZitiQL
 * translator: the current sessions go to Postgres as one JSON parameter and are queried as a
 * record set, so the same SQL and the same rules apply.
 */
export class PgApiSessionQuery implements ApiSessionQuery {
  constructor(private readonly db: Db) {}

  async list(sessions: LiveApiSession[], input: ListInput): Promise<ListPage<LiveApiSession>> {
    const records = sessions.map((s) => ({
      id: s.id,
      token: s.token,
      identity_id: s.identityId,
      authenticator_id: s.authenticatorId,
      ip_address: s.ipAddress,
      last_activity_at: s.lastActivityAt,
      created_at: s.createdAt,
      updated_at: s.lastActivityAt,
      tags: s.tags,
    }));
    const listed = await listRows<{ id: string }>(this.db, apiSessionQuery, input, {
      columns: 's.id',
      with: {
        sql: `api_sessions_snapshot as (select * from jsonb_to_recordset($1::jsonb) as x(id text, token text, identity_id text,
                authenticator_id text, ip_address text, last_activity_at timestamptz, created_at timestamptz,
                updated_at timestamptz, tags jsonb))`,
        params: [JSON.stringify(records)],
      },
    });
    const byId = new Map(sessions.map((s) => [s.id, s]));
    return {
      items: listed.rows.map((r) => byId.get(r.id)!).filter(Boolean),
      totalCount: listed.totalCount,
      pagination: listed.pagination,
      filterableFields: listed.filterableFields,
    };
  }
}
