import { type EnrollmentState, enrollmentEventTypes, enrollmentState } from '@ziti/contracts';
import type { Db, EventSubscription, Logger, RebuildableReadModel } from '@ziti/platform';
import { on } from '@ziti/platform';
import type { OutstandingEnrollment, OutstandingEnrollmentModel } from './outstanding-enrollments.domain.ts';

/** The row of an identity's enrollment; router enrollments are not kept (nothing reads them here). */
const rowOf = (s: EnrollmentState): OutstandingEnrollment | null =>
  s.identityId === null ? null : { id: s.id, identityId: s.identityId, expiresAt: s.expiresAt };

/**
 * Follows pki-enrollment's `enrollment.created|updated|deleted` (non-secret states, applied by
 * position in any order) into the read model of which identities have an outstanding enrollment,
 * and rebuilds it from pki-enrollment's `enrollment` state pages on first start or after a gap
 * (docs/adr/0008, 0012). Identity details ask pki-enrollment for enrollments only where it has one.
 */
export function enrollmentReadModelSubscription(
  model: (tx: Db) => OutstandingEnrollmentModel,
  logger: Logger,
): EventSubscription {
  const { enrollmentCreated, enrollmentUpdated, enrollmentDeleted } = enrollmentEventTypes;
  const rebuild: RebuildableReadModel = {
    entity: 'enrollment',
    applyPage: async (tx, page) => {
      const m = model(tx);
      let unreadable = 0;
      for (const raw of page.states) {
        const parsed = enrollmentState.safeParse(raw);
        if (!parsed.success) {
          unreadable++;
          continue;
        }
        const row = rowOf(parsed.data);
        if (row) await m.apply(row, page.position, false);
      }
      await m.tombstoneAbsent(
        {
          ...(page.after === undefined ? {} : { after: page.after }),
          ...(page.upTo === undefined ? {} : { upTo: page.upTo }),
        },
        page.states.map((s) => String(s.id)),
        page.position,
      );
      if (unreadable > 0) logger.warn({ entity: 'enrollment', unreadable }, 'owner states of an unknown shape skipped');
    },
    prune: (tx, watermark) => model(tx).pruneTombstones(watermark),
  };
  return {
    source: 'pki-enrollment',
    handlers: [enrollmentCreated, enrollmentUpdated, enrollmentDeleted].map((def) =>
      on(def, async (tx, state, event) => {
        const row = rowOf(state);
        if (row) await model(tx).apply(row, event.sequence, def === enrollmentDeleted);
      }),
    ),
    readModels: [rebuild],
  };
}
