import { type Bus, type Database, type Logger, OutboxRelay, SecretBox, createUnitOfWork } from '@ziti/platform';
import { PgCaStore } from '../cas/cas.store.ts';
import type { PkiConfig } from '../config.ts';
import { PgEnrollmentStore } from '../enrollments/enrollments.store.ts';
import { PgSessionCertificateStore } from '../session-certificates/session-certificates.store.ts';
import type { PkiStores } from './stores.ports.ts';

/**
 * What pki-enrollment's resources share: the database, bus and logger, the key box that seals
 * private keys and enrollment tokens at rest (`ZITI_SECRET_KEY` and the keys it replaced), the relay
 * and the unit of work over its stores.
 */
export function pkiCoreWiring(d: { config: PkiConfig; database: Database; bus: Bus; logger: Logger }) {
  const box = new SecretBox(d.config.secretKey, { previousSecrets: d.config.previousSecretKeys ?? [] });
  const relay = new OutboxRelay(d.database, d.bus, 'pki-enrollment', d.logger);
  const work = createUnitOfWork<PkiStores>(d.database, relay, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx),
    events,
  }));
  return { ...d, box, relay, work };
}

export type PkiCore = ReturnType<typeof pkiCoreWiring>;
