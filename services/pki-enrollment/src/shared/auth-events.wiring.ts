import { PgEnrollmentStore } from '../enrollments/enrollments.store.ts';
import { PgSessionCertificateStore } from '../session-certificates/session-certificates.store.ts';
import { AuthEventEffects } from './auth-event-effects.domain.ts';
import { authEventSubscription } from './auth-events.transport.ts';
import type { PkiCore } from './core.wiring.ts';

/** What auth's events (an identity deleted, an API session ended) do to enrollments and session certificates. */
export const authEventsWiring = ({ box }: PkiCore) =>
  authEventSubscription(new AuthEventEffects(), (tx, events) => ({
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx),
  }));
