import { type Db, listRows, queryRows } from '@ziti/platform';
import { defineQueryEntity, scalar } from '@ziti/zitiql';
import type { EntityReadModel, ListInput, ListPage, ReadModelRow } from '../domain/ports.ts';

/** Role attributes are filtered as strings under the symbol `id` (ZITI-FACTS §3.4). */
export const roleAttributeQuery = defineQueryEntity({
  table: 'role_attributes',
  alias: 'r',
  fields: { id: scalar('r.id', 'string') },
});

/** A column of a read model table filled from the state: name, SQL cast, value. */
export interface ReadModelColumn<S> {
  name: string;
  cast?: string;
  value: (state: S) => unknown;
}

export interface ReadModelTable<S> {
  table: string;
  /** Columns besides `id`, `state`, `source_sequence`, `deleted` and `updated_at`. */
  columns: ReadModelColumn<S>[];
}

/**
 * A read model of another service's entities, one table per entity type: each row keeps the
 * owner's full state and the sequence of the event that wrote it. Events apply only forward
 * (`source_sequence` grows), deletions leave tombstones, so late or repeated events never roll an
 * entity back or bring it back; the integrity check may overwrite a row with the owner's state.
 */
export class PgEntityReadModel<S extends { id: string }> implements EntityReadModel<S> {
  constructor(
    private readonly db: Db,
    private readonly def: ReadModelTable<S>,
  ) {}

  private upsertSql(guarded: boolean): string {
    const names = this.def.columns.map((c) => c.name);
    const values = this.def.columns.map((c, i) => `$${i + 2}${c.cast ? `::${c.cast}` : ''}`);
    const n = names.length;
    const sets = names.map((c) => `${c} = excluded.${c}`).join(', ');
    return `insert into ${this.def.table} (id, ${names.join(', ')}, state, source_sequence, deleted, updated_at)
      values ($1, ${values.join(', ')}, $${n + 2}::jsonb, $${n + 3}, $${n + 4}, now())
      on conflict (id) do update set ${sets}, state = excluded.state,
        source_sequence = ${guarded ? 'excluded.source_sequence' : `greatest(${this.def.table}.source_sequence, excluded.source_sequence)`},
        deleted = excluded.deleted, updated_at = now()
      ${guarded ? `where ${this.def.table}.source_sequence < excluded.source_sequence` : ''}
      returning id`;
  }

  private params(state: S, sequence: number, deleted: boolean): unknown[] {
    return [state.id, ...this.def.columns.map((c) => c.value(state)), JSON.stringify(state), sequence, deleted];
  }

  async apply(state: S, sequence: number, deleted: boolean): Promise<boolean> {
    return (await queryRows(this.db, this.upsertSql(true), this.params(state, sequence, deleted))).length > 0;
  }

  async overwrite(state: S): Promise<void> {
    await queryRows(this.db, this.upsertSql(false), this.params(state, 0, false));
  }

  async tombstone(id: string): Promise<void> {
    await queryRows(this.db, `update ${this.def.table} set deleted = true, updated_at = now() where id = $1`, [id]);
  }

  async liveRows(after: string | undefined, upTo: string | undefined, limit: number): Promise<ReadModelRow[]> {
    const rows = await queryRows<{ id: string; state: unknown }>(
      this.db,
      `select id, state from ${this.def.table}
        where not deleted and ($1::text is null or id collate "C" > $1) and ($2::text is null or id collate "C" <= $2)
        order by id collate "C" limit $3`,
      [after ?? null, upTo ?? null, limit],
    );
    return rows.map((r) => ({
      id: r.id,
      state: (typeof r.state === 'string' ? JSON.parse(r.state) : r.state) as Record<string, unknown>,
    }));
  }

  /** Distinct attributes of live entities; only limit/skip inside the filter page them. */
  async roleAttributes(input: ListInput): Promise<ListPage<string>> {
    const listed = await listRows<{ id: string }>(
      this.db,
      roleAttributeQuery,
      { filter: input.filter ?? '', limit: -1 },
      {
        columns: 'r.id',
        with: {
          sql: `role_attributes as (select distinct unnest(role_attributes) as id from ${this.def.table} where not deleted)`,
          params: [],
        },
      },
    );
    return {
      items: listed.rows.map((r) => r.id),
      totalCount: listed.totalCount,
      pagination: listed.pagination,
      filterableFields: listed.filterableFields,
    };
  }
}
