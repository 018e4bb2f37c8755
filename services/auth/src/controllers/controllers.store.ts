import { type Db, listRows } from '@ziti/platform';
import type { ControllerQuery, ControllerRecord } from './controllers.domain.ts';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import { controllerQuery } from '../shared/query-entities.store.ts';

/** Controller records are not stored: they are queried as a JSON record set, like API sessions. */
export class PgControllerQuery implements ControllerQuery {
  constructor(private readonly db: Db) {}

  async list(records: ControllerRecord[], input: ListInput): Promise<ListPage<ControllerRecord>> {
    const rows = records.map((r) => ({
      id: r.id,
      name: r.name,
      fingerprint: r.fingerprint,
      is_online: r.isOnline,
      last_joined_at: r.lastJoinedAt.toISOString(),
      ctrl_address: r.ctrlAddress,
      created_at: r.createdAt.toISOString(),
      updated_at: r.updatedAt.toISOString(),
      tags: {},
    }));
    const listed = await listRows<{ id: string }>(this.db, controllerQuery, input, {
      columns: 'c.id',
      with: {
        sql: `controllers_snapshot as (select * from jsonb_to_recordset($1::jsonb) as x(id text, name text, fingerprint text,
                is_online boolean, last_joined_at timestamptz, ctrl_address text, created_at timestamptz, updated_at timestamptz, tags jsonb))`,
        params: [JSON.stringify(rows)],
      },
    });
    const byId = new Map(records.map((r) => [r.id, r]));
    return {
      items: listed.rows.map((r) => byId.get(r.id)!).filter(Boolean),
      totalCount: listed.totalCount,
      pagination: listed.pagination,
      filterableFields: listed.filterableFields,
    };
  }
}
