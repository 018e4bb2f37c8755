import { type IntegrityResult, enrollmentState } from '@ziti/contracts';
import type { Bus, Database, Db } from '@ziti/platform';
import { ownerEntityStates } from '@ziti/platform';
import type { OutstandingEnrollment, OutstandingEnrollmentModel } from './enrollment-events.ts';

/** The read model with what the check reads besides what events write. */
export interface CheckedOutstandingEnrollments extends OutstandingEnrollmentModel {
  liveRows(
    after: string | undefined,
    upTo: string | undefined,
  ): Promise<(OutstandingEnrollment & { position: number })[]>;
  positionOf(id: string): Promise<number | undefined>;
}

/**
 * auth's read model of outstanding enrollments against pki-enrollment's `enrollment` pages
 * (docs/adr/0008, 0012): missing, differing and extra rows are reported and, when fixing, the
 * owner's state at the page's position is applied guarded, so a fix never rolls back a newer event;
 * a row newer than the page is not drift (pki-enrollment moved on after the page was read).
 */
export async function checkOutstandingEnrollments(
  database: Database,
  bus: Bus,
  model: (db: Db) => CheckedOutstandingEnrollments,
  fix: boolean,
): Promise<IntegrityResult[]> {
  const results: IntegrityResult[] = [];
  const label = 'read model: enrollment';
  for await (const page of ownerEntityStates(bus, 'pki-enrollment', 'enrollment')) {
    const live = new Map((await model(database.db).liveRows(page.after, page.upTo)).map((r) => [r.id, r]));
    const owned = new Set(page.states.map((s) => String(s.id)));
    for (const raw of page.states) {
      const parsed = enrollmentState.safeParse(raw);
      if (!parsed.success || parsed.data.identityId === null) continue;
      const s = parsed.data;
      const row = live.get(s.id);
      if (row && row.identityId === s.identityId && row.expiresAt === new Date(s.expiresAt).toISOString()) continue;
      if (((await model(database.db).positionOf(s.id)) ?? 0) > page.position) continue;
      const what = row ? 'differs from its owner' : 'is missing from the read model';
      if (fix)
        await database.transaction((tx) =>
          model(tx).apply({ id: s.id, identityId: s.identityId!, expiresAt: s.expiresAt }, page.position, false),
        );
      results.push({ description: `${label} ${s.id} of identity ${s.identityId} ${what}`, fixed: fix });
    }
    for (const row of live.values()) {
      if (owned.has(row.id) || row.position > page.position) continue;
      if (fix) await database.transaction((tx) => model(tx).apply(row, page.position, true));
      results.push({
        description: `${label} ${row.id} of identity ${row.identityId} is in the read model but its owner no longer has it`,
        fixed: fix,
      });
    }
  }
  return results;
}
