import type { EventSink } from '@ziti/platform/event-sink';
import type { CaStore } from '../cas/cas.ports.ts';
import type { EnrollmentStore } from '../enrollments/enrollments.ports.ts';
import type { SessionCertificateStore } from '../session-certificates/session-certificates.ports.ts';

/** The stores of one transaction and the events that leave with it. */
export interface PkiStores {
  cas: CaStore;
  enrollments: EnrollmentStore;
  sessionCertificates: SessionCertificateStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: PkiStores) => Promise<T>) => Promise<T>;
