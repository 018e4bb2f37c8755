import type { IdentityState } from '@ziti/contracts';
import { type Db, listRows, queryRows } from '@ziti/platform';
import { defineQueryEntity, scalar } from '@ziti/zitiql';
import type { IdentityReadModel, ListInput, ListPage } from '../domain/ports.ts';

/** Role attributes are filtered as strings under the symbol `id` (ZITI-FACTS §3.4). */
export const roleAttributeQuery = defineQueryEntity({
  table: 'role_attributes',
  alias: 'r',
  fields: { id: scalar('r.id', 'string') },
});

export class PgIdentityReadModel implements IdentityReadModel {
  constructor(private readonly db: Db) {}

  async apply(state: IdentityState, sequence: number, deleted: boolean): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `insert into identities (id, name, type_id, is_admin, role_attributes, state, source_sequence, deleted, updated_at)
       values ($1, $2, $3, $4, $5::text[], $6::jsonb, $7, $8, now())
       on conflict (id) do update set name = excluded.name, type_id = excluded.type_id, is_admin = excluded.is_admin,
         role_attributes = excluded.role_attributes, state = excluded.state, source_sequence = excluded.source_sequence,
         deleted = excluded.deleted, updated_at = now()
       where identities.source_sequence < excluded.source_sequence
       returning id`,
      [state.id, state.name, state.typeId, state.isAdmin, state.roleAttributes, JSON.stringify(state), sequence, deleted],
    );
    return rows.length > 0;
  }

  /** Distinct attributes of live identities; only limit/skip inside the filter page them. */
  async roleAttributes(input: ListInput): Promise<ListPage<string>> {
    const listed = await listRows<{ id: string }>(this.db, roleAttributeQuery, { filter: input.filter ?? '', limit: -1 }, {
      columns: 'r.id',
      with: { sql: 'role_attributes as (select distinct unnest(role_attributes) as id from identities where not deleted)', params: [] },
    });
    return {
      items: listed.rows.map((r) => r.id),
      totalCount: listed.totalCount,
      pagination: listed.pagination,
      filterableFields: listed.filterableFields,
    };
  }
}
