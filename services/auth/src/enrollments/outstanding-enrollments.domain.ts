import { type IntegrityResult, enrollmentState } from '@ziti/contracts';

/** One outstanding identity enrollment as the read model keeps it. */
export interface OutstandingEnrollment {
  id: string;
  identityId: string;
  expiresAt: string;
}

/** auth's read model of pki-enrollment's outstanding identity enrollments, in one transaction. */
export interface OutstandingEnrollmentModel {
  /** Writes the row (a tombstone when `deleted`) only over an older position; whether it did. */
  apply(row: OutstandingEnrollment, position: number, deleted: boolean): Promise<boolean>;
  /** Live rows with ids in (`after`, `upTo`] other than `present` become tombstones at `position`. */
  tombstoneAbsent(range: { after?: string; upTo?: string }, present: string[], position: number): Promise<number>;
  pruneTombstones(watermark: number): Promise<number>;
}

/** The read model with what the check reads besides what events write. */
export interface CheckedOutstandingEnrollments extends OutstandingEnrollmentModel {
  liveRows(
    after: string | undefined,
    upTo: string | undefined,
  ): Promise<(OutstandingEnrollment & { position: number })[]>;
  positionOf(id: string): Promise<number | undefined>;
}

/** One page of pki-enrollment's `enrollment` states, read at its event `position`, covering ids in (`after`, `upTo`]. */
export interface EnrollmentOwnerPage {
  states: Record<string, unknown>[];
  position: number;
  after?: string;
  upTo?: string;
}

/** What the check of outstanding enrollments reads and, when fixing, writes. */
export interface OutstandingEnrollmentIntegrityPorts {
  /** pki-enrollment's `enrollment` states, page by page in bytewise id order. */
  ownerPages(): AsyncIterable<EnrollmentOwnerPage>;
  /** The read model's rows, read outside any transaction. */
  rows: Pick<CheckedOutstandingEnrollments, 'liveRows' | 'positionOf'>;
  /** One transaction over the read model (a fix of auth's own copy: no events). */
  transaction: <T>(fn: (model: OutstandingEnrollmentModel) => Promise<T>) => Promise<T>;
}

/**
 * auth's read model of outstanding enrollments against pki-enrollment's `enrollment` pages
 * (docs/adr/0008, 0012): missing, differing and extra rows are reported and, when fixing, the
 * owner's state at the page's position is applied guarded, so a fix never rolls back a newer event;
 * a row newer than the page is not drift (pki-enrollment moved on after the page was read).
 */
export class OutstandingEnrollmentIntegrity {
  constructor(private readonly ports: OutstandingEnrollmentIntegrityPorts) {}

  async check(fix: boolean): Promise<IntegrityResult[]> {
    const { rows, transaction } = this.ports;
    const results: IntegrityResult[] = [];
    const label = 'read model: enrollment';
    for await (const page of this.ports.ownerPages()) {
      const live = new Map((await rows.liveRows(page.after, page.upTo)).map((r) => [r.id, r]));
      const owned = new Set(page.states.map((s) => String(s.id)));
      for (const raw of page.states) {
        const parsed = enrollmentState.safeParse(raw);
        if (!parsed.success || parsed.data.identityId === null) continue;
        const s = parsed.data;
        const row = live.get(s.id);
        if (row && row.identityId === s.identityId && row.expiresAt === new Date(s.expiresAt).toISOString()) continue;
        if (((await rows.positionOf(s.id)) ?? 0) > page.position) continue;
        const what = row ? 'differs from its owner' : 'is missing from the read model';
        if (fix)
          await transaction((model) =>
            model.apply({ id: s.id, identityId: s.identityId!, expiresAt: s.expiresAt }, page.position, false),
          );
        results.push({ description: `${label} ${s.id} of identity ${s.identityId} ${what}`, fixed: fix });
      }
      for (const row of live.values()) {
        if (owned.has(row.id) || row.position > page.position) continue;
        if (fix) await transaction((model) => model.apply(row, page.position, true));
        results.push({
          description: `${label} ${row.id} of identity ${row.identityId} is in the read model but its owner no longer has it`,
          fixed: fix,
        });
      }
    }
    return results;
  }
}
