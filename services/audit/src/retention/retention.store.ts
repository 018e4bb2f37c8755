import { type Db, queryRows } from '@ziti/platform';
import type { RetentionStore } from './retention.ports.ts';

export class PgRetentionStore implements RetentionStore {
  constructor(private readonly db: Db) {}

  async deleteRecordsBefore(cutoff: Date, limit: number): Promise<number> {
    const rows = await queryRows(
      this.db,
      `with doomed as (
         select id from audit_records where at < $1 order by at limit $2 for update skip locked)
       delete from audit_records r using doomed d where r.id = d.id returning r.id`,
      [cutoff.toISOString(), limit],
    );
    return rows.length;
  }

  /**
   * Tombstones at or below their source's watermark (every event up to it is applied, so no older
   * event can still need them to refuse a stale state) and older than `olderThanSeconds`.
   */
  async pruneTombstones(olderThanSeconds: number): Promise<number> {
    const rows = await queryRows(
      this.db,
      `delete from entity_states e
        using (select source, min(watermark) as watermark from event_cursors group by source) c
        where e.deleted and e.source = c.source and e.source_sequence <= c.watermark
          and e.updated_at < now() - make_interval(secs => $1)
          and not exists (select 1 from parked_events p where p.source = e.source and p.position <= e.source_sequence)
        returning e.id`,
      [olderThanSeconds],
    );
    return rows.length;
  }
}
