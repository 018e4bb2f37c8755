import { type Db, ReadModelRows, date, queryRows } from '@ziti/platform';
import type { CheckedOutstandingEnrollments } from './outstanding-enrollments.domain.ts';

/** What the read model keeps of one of pki-enrollment's identity enrollments (never its token or JWT). */
export interface OutstandingEnrollmentRow {
  id: string;
  identityId: string;
  expiresAt: string;
}

const upsert = `insert into outstanding_enrollments (id, identity_id, expires_at, source_sequence, deleted, updated_at)
    values ($1, $2, $3::timestamptz, $4, $5, now())
  on conflict (id) do update set identity_id = excluded.identity_id, expires_at = excluded.expires_at,
    source_sequence = excluded.source_sequence, deleted = excluded.deleted, updated_at = now()
  where outstanding_enrollments.source_sequence < excluded.source_sequence
     or (outstanding_enrollments.source_sequence = excluded.source_sequence
         and (outstanding_enrollments.identity_id, outstanding_enrollments.expires_at, outstanding_enrollments.deleted)
             is distinct from (excluded.identity_id, excluded.expires_at, excluded.deleted))
  returning id`;

/**
 * auth's read model of pki-enrollment's outstanding identity enrollments (docs/adr/0012), kept like
 * every read model (docs/adr/0008): a row is written only over an older owner position
 * (`source_sequence`; at the same position only when it differs, which is drift), a deletion
 * leaves a tombstone, so no order of arrival brings an enrollment back or drops a live one.
 */
export class PgOutstandingEnrollments implements CheckedOutstandingEnrollments {
  private readonly rows: ReadModelRows;

  constructor(private readonly db: Db) {
    this.rows = new ReadModelRows(db, 'outstanding_enrollments');
  }

  async apply(row: OutstandingEnrollmentRow, position: number, deleted: boolean): Promise<boolean> {
    const written = await queryRows(this.db, upsert, [row.id, row.identityId, row.expiresAt, position, deleted]);
    return written.length > 0;
  }

  /** Live rows with ids in (`after`, `upTo`] other than `present` become tombstones at `position` (guarded). */
  tombstoneAbsent(range: { after?: string; upTo?: string }, present: string[], position: number): Promise<number> {
    return this.rows.tombstoneAbsent(range, present, position);
  }

  pruneTombstones(watermark: number, olderThanSeconds = 3600): Promise<number> {
    return this.rows.pruneTombstones(watermark, olderThanSeconds);
  }

  /** Live rows with `after < id <= upTo` (bytewise id order), with the position that wrote them. */
  async liveRows(
    after: string | undefined,
    upTo: string | undefined,
  ): Promise<(OutstandingEnrollmentRow & { position: number })[]> {
    const rows = await queryRows<{ id: string; identity_id: string; expires_at: Date | string; p: string | number }>(
      this.db,
      `select id, identity_id, expires_at, source_sequence as p from outstanding_enrollments
        where not deleted and ($1::text is null or id collate "C" > $1) and ($2::text is null or id collate "C" <= $2)
        order by id collate "C"`,
      [after ?? null, upTo ?? null],
    );
    return rows.map((r) => ({
      id: r.id,
      identityId: r.identity_id,
      expiresAt: date(r.expires_at).toISOString(),
      position: Number(r.p),
    }));
  }

  /** The position the stored row (live or tombstone) was written at. */
  async positionOf(id: string): Promise<number | undefined> {
    const [row] = await queryRows<{ p: string | number }>(
      this.db,
      'select source_sequence as p from outstanding_enrollments where id = $1',
      [id],
    );
    return row ? Number(row.p) : undefined;
  }

  /** Those of `identityIds` that have an outstanding enrollment (expired ones included: they are shown too). */
  async identitiesWithAny(identityIds: string[]): Promise<Set<string>> {
    if (identityIds.length === 0) return new Set();
    const rows = await queryRows<{ identity_id: string }>(
      this.db,
      'select distinct identity_id from outstanding_enrollments where identity_id = any($1::text[]) and not deleted',
      [identityIds],
    );
    return new Set(rows.map((r) => r.identity_id));
  }
}
