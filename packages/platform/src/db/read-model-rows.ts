import { type Db, queryRows } from './database.ts';

/**
 * What every read-model table does alike (docs/adr/0008): rows keyed by `id` with the owner's
 * position (`source_sequence`), deletions kept as tombstones (`deleted`) until they can no longer
 * matter (`updated_at`). `table` is a name of the service's own schema, never input.
 */
export class ReadModelRows {
  constructor(
    private readonly db: Db,
    private readonly table: string,
  ) {}

  /**
   * Live rows with ids in (`after`, `upTo`] (bytewise, as owners page) other than `present`
   * become tombstones at `position`, unless a newer event wrote them: an owner's page that lacks
   * them says they are gone.
   */
  async tombstoneAbsent(
    range: { after?: string; upTo?: string },
    present: string[],
    position: number,
  ): Promise<number> {
    const rows = await queryRows(
      this.db,
      `update ${this.table} set deleted = true, source_sequence = $4, updated_at = now()
        where not deleted and source_sequence <= $4
          and ($1::text is null or id collate "C" > $1) and ($2::text is null or id collate "C" <= $2)
          and not (id = any($3::text[]))
        returning id`,
      [range.after ?? null, range.upTo ?? null, present, position],
    );
    return rows.length;
  }

  /** Deletes tombstones at or below `watermark` (no older event can arrive) older than `olderThanSeconds`. */
  async pruneTombstones(watermark: number, olderThanSeconds = 3600): Promise<number> {
    const rows = await queryRows(
      this.db,
      `delete from ${this.table}
        where deleted and source_sequence <= $1 and updated_at < now() - make_interval(secs => $2) returning id`,
      [watermark, olderThanSeconds],
    );
    return rows.length;
  }
}
