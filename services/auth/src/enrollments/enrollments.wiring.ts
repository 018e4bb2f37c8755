import { ownerEntityStates } from '@ziti/platform';
import type { AuthCore } from '../shared/core.wiring.ts';
import { enrollmentReadModelSubscription } from './enrollment-events.transport.ts';
import { OutstandingEnrollmentIntegrity } from './outstanding-enrollments.domain.ts';
import { PgOutstandingEnrollments } from './outstanding-enrollments.store.ts';
import { BusEnrollmentPort } from './pki-client.adapter.ts';

/**
 * Enrollments, which pki-enrollment owns: the client auth calls, the read model of outstanding
 * enrollments kept from its events (docs/adr/0012) and its integrity check against its pages.
 */
export function enrollmentsWiring(core: AuthCore) {
  return {
    enrollments: new BusEnrollmentPort(core.bus),
    subscription: enrollmentReadModelSubscription((tx) => new PgOutstandingEnrollments(tx), core.logger),
    integrity: new OutstandingEnrollmentIntegrity({
      ownerPages: () => ownerEntityStates(core.bus, 'pki-enrollment', 'enrollment'),
      rows: new PgOutstandingEnrollments(core.database.db),
      transaction: (fn) => core.database.transaction((tx) => fn(new PgOutstandingEnrollments(tx))),
    }),
  };
}
