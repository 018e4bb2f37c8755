import type { Bus, Database, Logger, OperationHandlers, RunnableService } from '@ziti/platform';
import { OutboxRelay, SecretBox, createServiceRuntime, createUnitOfWork, readMigrations } from '@ziti/platform';
import { ExtensionService } from './authenticators/extensions.domain.ts';
import { CaService } from './cas/cas.domain.ts';
import { PgCaStore } from './cas/cas.store.ts';
import type { PkiConfig } from './config.ts';
import { ControllerPkiService } from './controller-pki/controller-pki.domain.ts';
import { PgPkiMaterialStore } from './controller-pki/pki-material.store.ts';
import { EnrollService } from './enrollments/enroll.domain.ts';
import { EnrollmentJwtIssuer } from './enrollments/enrollment-jwt.domain.ts';
import { EnrollmentService } from './enrollments/enrollments.domain.ts';
import { PgEnrollmentStore, enrollmentStatesPage } from './enrollments/enrollments.store.ts';
import { pkiOperations, routerEnrollmentOperations } from './operations.transport.ts';
import { BusRouterDirectory } from './router-enrollments/router-directory.adapter.ts';
import { RouterEnrollmentService } from './router-enrollments/router-enrollments.domain.ts';
import { routerEnrollmentCalls } from './router-enrollments/router-enrollments.transport.ts';
import { SessionCertificateService } from './session-certificates/session-certificates.domain.ts';
import { PgSessionCertificateStore } from './session-certificates/session-certificates.store.ts';
import { BusCredentialPort } from './shared/auth-client.adapter.ts';
import { AuthEventEffects } from './shared/auth-event-effects.domain.ts';
import { authEventSubscription } from './shared/auth-events.transport.ts';
import { pkiCalls } from './shared/calls.transport.ts';
import { PkiMaintenance } from './shared/maintenance.domain.ts';
import { pgMaintenance } from './shared/maintenance.store.ts';
import { maintenanceCalls } from './shared/maintenance.transport.ts';
import type { PkiStores } from './shared/stores.ports.ts';

export interface PkiServiceDeps {
  config: PkiConfig;
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/** Composition root of the pki-enrollment service. */
export function createPkiService(deps: PkiServiceDeps): RunnableService {
  const { config } = deps;
  const box = new SecretBox(config.secretKey, { previousSecrets: config.previousSecretKeys ?? [] });
  const pki = new ControllerPkiService(new PgPkiMaterialStore(deps.database.db), box, {
    advertisedAddress: config.advertisedAddress,
    extraNames: config.extraServerNames,
    serverCertValidityDays: config.serverCertValidityDays,
    ...(config.suppliedSigner ? { suppliedSigner: config.suppliedSigner } : {}),
  });
  const relay = new OutboxRelay(deps.database, deps.bus, 'pki-enrollment', deps.logger);
  const work = createUnitOfWork<PkiStores>(deps.database, relay, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx),
    events,
  }));
  const credentials = new BusCredentialPort(deps.bus);
  const jwts = new EnrollmentJwtIssuer(pki, config.advertisedAddress);
  const cas = new CaService(work, jwts, pki);
  const enrollments = new EnrollmentService(work, jwts, credentials, {
    durationMinutes: config.enrollmentDurationMinutes,
  });
  const enroll = new EnrollService(work, pki, cas, credentials, { identityCertDays: config.identityCertValidityDays });
  const extensions = new ExtensionService(work, pki, cas, enrollments, credentials, {
    identityCertDays: config.identityCertValidityDays,
  });
  const sessionCertificates = new SessionCertificateService(work, pki);
  // Router enrollment (erott): routers belong to inventory, their enrollments and certificates here.
  const routerEnrollments = new RouterEnrollmentService(work, enrollments, pki, new BusRouterDirectory(deps.bus), {
    durationMinutes: config.enrollmentDurationMinutes,
    certDays: config.identityCertValidityDays,
  });
  enroll.register(routerEnrollments.erottModule());
  return createServiceRuntime({
    owner: 'pki-enrollment',
    database: deps.database,
    bus: deps.bus,
    logger: deps.logger,
    migrations,
    relay,
    operations: {
      ...pkiOperations({ pki, cas, enrollments, enroll, extensions, sessionCertificates, jwts, credentials }),
      ...routerEnrollmentOperations(routerEnrollments, enroll),
    } satisfies OperationHandlers<'pki-enrollment'>,
    calls: {
      ...pkiCalls({ pki, cas, enrollments }),
      ...routerEnrollmentCalls(routerEnrollments),
      ...maintenanceCalls(pgMaintenance(deps.database, new PkiMaintenance(routerEnrollments, enrollmentStatesPage))),
    },
    subscriptions: [
      authEventSubscription(new AuthEventEffects(), (tx, events) => ({
        enrollments: new PgEnrollmentStore(tx, box, events),
        sessionCertificates: new PgSessionCertificateStore(tx),
      })),
    ],
    onStart: () => pki.initialize(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
