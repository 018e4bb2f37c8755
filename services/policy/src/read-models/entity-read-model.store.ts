import { type Db, ReadModelRows, isEmbedded, json, queryRows } from '@ziti/platform';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { roleAttributesOf } from '../shared/role-attributes.store.ts';
import type { Applied, EntityReadModel, ReadModelRow } from './read-models.ports.ts';

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
  /**
   * What depends on the entity reads only these columns (and whether it is deleted), not the rest
   * of its state: a newer state that leaves them as they were needs no derivation (an identity's
   * login changes its envInfo, never its access). Absent: every applied state is derived again.
   */
  derivedFromColumns?: boolean;
}

/**
 * A read model of another service's entities, one table per entity type: each row keeps the
 * owner's full state and the owner's event position that wrote it (`source_sequence`). Every write
 * — an event, a page of the owner's state in a resync, an integrity fix — applies only over an
 * older position (or over the same position when the row differs: the owner's state at a position
 * is unique, so a differing row at that position is drift), and deletions leave tombstones, so no order of arrival rolls an entity back or
 * brings it back (docs/adr/0008). Tombstones go once no older write can arrive any more.
 */
export class PgEntityReadModel<S extends { id: string }> implements EntityReadModel<S> {
  constructor(
    private readonly db: Db,
    private readonly def: ReadModelTable<S>,
  ) {}

  private upsertSql(): string {
    const names = this.def.columns.map((c) => c.name);
    const values = this.def.columns.map((c, i) => `$${i + 2}${c.cast ? `::${c.cast}` : ''}`);
    const n = names.length;
    const sets = names.map((c) => `${c} = excluded.${c}`).join(', ');
    const compared = [...names, 'state', 'deleted'];
    return `insert into ${this.def.table} (${['id', ...names].join(', ')}, state, source_sequence, deleted, updated_at)
      values (${['$1', ...values].join(', ')}, $${n + 2}::jsonb, $${n + 3}, $${n + 4}, now())
      on conflict (id) do update set ${sets ? `${sets}, ` : ''}state = excluded.state,
        source_sequence = excluded.source_sequence, deleted = excluded.deleted, updated_at = now()
      where ${this.def.table}.source_sequence < excluded.source_sequence
         or (${this.def.table}.source_sequence = excluded.source_sequence
             and (${compared.map((c) => `${this.def.table}.${c}`).join(', ')})
                 is distinct from (${compared.map((c) => `excluded.${c}`).join(', ')}))
      returning id, ${this.def.table}.xmax = 0 as inserted${this.def.derivedFromColumns ? `, ${this.movedSql()} as moved` : ''}`;
  }

  /**
   * Whether the columns or the deletion moved: the subquery reads the row as it was before this
   * statement (a statement never sees its own writes; `applyState` locked it first, so that is the
   * newest committed row), null where it saw none.
   */
  private movedSql(): string {
    const t = this.def.table;
    const cols = [...this.def.columns.map((c) => c.name), 'deleted'];
    return `(select (${cols.map((c) => `o.${c}`).join(', ')}) is distinct from (${cols
      .map((c) => `${t}.${c}`)
      .join(', ')}) from ${t} o where o.id = ${t}.id)`;
  }

  private params(state: S, position: number, deleted: boolean): unknown[] {
    return [state.id, ...this.def.columns.map((c) => c.value(state)), JSON.stringify(state), position, deleted];
  }

  async apply(state: S, position: number, deleted: boolean): Promise<boolean> {
    return (await this.applyState(state, position, deleted)) !== false;
  }

  async applyState(state: S, position: number, deleted: boolean): Promise<Applied> {
    // The row is locked first, so the upsert's own statement reads the newest committed row as the
    // one it replaces: a concurrent writer of the same entity (another consumer batch, a resync, an
    // integrity fix) has committed by then, and `moved` compares with what it wrote. Without the lock
    // the comparison could see the row as it was before that writer and skip a derivation it needs.
    // PGlite runs one transaction at a time: there is no other writer to wait for.
    if (this.def.derivedFromColumns && !isEmbedded(this.db))
      await queryRows(this.db, `select 1 from ${this.def.table} where id = $1 for update`, [state.id], {
        prepare: true,
      });
    const [row] = await queryRows<{ moved?: boolean | null; inserted: boolean }>(
      this.db,
      this.upsertSql(),
      this.params(state, position, deleted),
      { prepare: true },
    );
    if (!row) return false;
    // Inserted (not the conflict's update: a row version no one replaced): there was no row at all,
    // and a concurrent writer of the same entity takes the update path. `moved` cannot tell: its
    // subquery reads the statement's snapshot, which may predate a row that writer committed.
    return { derive: !this.def.derivedFromColumns || row.moved !== false, fresh: row.inserted === true };
  }

  async tombstone(id: string, position: number): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `update ${this.def.table} set deleted = true, source_sequence = $2, updated_at = now()
        where id = $1 and (source_sequence < $2 or (source_sequence = $2 and not deleted)) returning id`,
      [id, position],
      { prepare: true },
    );
    return rows.length > 0;
  }

  tombstoneAbsent(range: { after?: string; upTo?: string }, present: string[], position: number): Promise<number> {
    return new ReadModelRows(this.db, this.def.table).tombstoneAbsent(range, present, position);
  }

  async positionOf(id: string): Promise<number | undefined> {
    const [row] = await queryRows<{ p: string | number }>(
      this.db,
      `select source_sequence as p from ${this.def.table} where id = $1`,
      [id],
      { prepare: true },
    );
    return row ? Number(row.p) : undefined;
  }

  async current(id: string): Promise<{ state: S; position: number } | undefined> {
    const [row] = await queryRows<{ state: unknown; p: string | number }>(
      this.db,
      `select state, source_sequence as p from ${this.def.table} where id = $1 and not deleted`,
      [id],
      { prepare: true },
    );
    return row ? { state: json<S>(row.state), position: Number(row.p) } : undefined;
  }

  pruneTombstones(watermark: number, olderThanSeconds = 3600): Promise<number> {
    return new ReadModelRows(this.db, this.def.table).pruneTombstones(watermark, olderThanSeconds);
  }

  async liveRows(after: string | undefined, upTo: string | undefined, limit: number): Promise<ReadModelRow[]> {
    const rows = await queryRows<{ id: string; state: unknown }>(
      this.db,
      `select id, state from ${this.def.table}
        where not deleted and ($1::text is null or id collate "C" > $1) and ($2::text is null or id collate "C" <= $2)
        order by id collate "C" limit $3`,
      [after ?? null, upTo ?? null, limit],
      { prepare: true },
    );
    return rows.map((r) => ({
      id: r.id,
      state: json<Record<string, unknown>>(r.state),
    }));
  }

  /** Distinct attributes of live entities; only limit/skip inside the filter page them. */
  roleAttributes(input: ListInput): Promise<ListPage<string>> {
    return roleAttributesOf(this.db, `${this.def.table} where not deleted`, input);
  }
}
