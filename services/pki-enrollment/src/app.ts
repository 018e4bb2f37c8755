import type { Bus, Database, Logger, OperationHandlers, RunnableService } from '@ziti/platform';
import { maintenanceCalls } from './bus/maintenance.ts';
import { BusRouterDirectory, routerEnrollmentCalls, routerEnrollmentOperations } from './bus/router-enrollment.ts';
import { RouterEnrollmentService } from './domain/router-enrollment.ts';
import { AuthEventEffects } from './domain/auth-event-effects.ts';
import { PkiMaintenance } from './domain/pki-maintenance.ts';
import { OutboxRelay, SecretBox, createServiceRuntime, createUnitOfWork, readMigrations } from '@ziti/platform';
import { BusCredentialPort } from './bus/auth-client.ts';
import { authEventSubscription } from './bus/auth-events.ts';
import { pkiCalls } from './bus/calls.ts';
import { pkiOperations } from './bus/operations.ts';
import type { PkiConfig } from './config.ts';
import { CaService } from './domain/ca-service.ts';
import { ControllerPkiService } from './domain/controller-pki.ts';
import { EnrollService } from './domain/enroll-service.ts';
import { EnrollmentJwtIssuer } from './domain/enrollment-jwt.ts';
import { EnrollmentService } from './domain/enrollment-service.ts';
import { ExtensionService } from './domain/extension-service.ts';
import type { PkiStores } from './domain/ports.ts';
import { SessionCertificateService } from './domain/session-certificate-service.ts';
import { PgPkiMaterialStore } from './store/pg-pki-material-store.ts';
import { PgCaStore } from './store/pg-ca-store.ts';
import { PgEnrollmentStore, enrollmentStatesPage } from './store/pg-enrollment-store.ts';
import { PgSessionCertificateStore } from './store/pg-session-certificate-store.ts';

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
  const box = new SecretBox(config.secretKey);
  const pki = new ControllerPkiService(new PgPkiMaterialStore(deps.database.db), box, {
    advertisedAddress: config.advertisedAddress,
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
      ...maintenanceCalls(deps.database, new PkiMaintenance(routerEnrollments, enrollmentStatesPage)),
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
