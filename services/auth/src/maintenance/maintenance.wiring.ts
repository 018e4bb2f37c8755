import type { CallTable, Db } from '@ziti/platform';
import type { OutstandingEnrollmentIntegrity } from '../enrollments/outstanding-enrollments.domain.ts';
import { PgIdentityStore } from '../identities/identities.store.ts';
import type { RouterIdentityIntegrity } from '../router-identities/router-identity-integrity.domain.ts';
import type { AuthCore } from '../shared/core.wiring.ts';
import { AuthMaintenance } from './auth-maintenance.domain.ts';
import { pgMaintenance } from './maintenance.store.ts';
import { maintenanceCalls } from './maintenance.transport.ts';

/** auth's maintenance calls: its tables and live sessions counted, its checks, its identity states. */
export function maintenanceWiring(
  core: AuthCore,
  checks: { routerIdentities: RouterIdentityIntegrity; outstandingEnrollments: OutstandingEnrollmentIntegrity },
): CallTable {
  return maintenanceCalls(
    pgMaintenance(
      core.database,
      new AuthMaintenance<Db>({ identities: (tx) => new PgIdentityStore(tx), sessions: core.sessions, ...checks }),
    ),
  );
}
