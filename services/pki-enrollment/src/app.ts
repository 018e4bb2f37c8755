import type { Bus, Database, Logger, OperationHandlers, RunnableService } from '@ziti/platform';
import { createServiceRuntime, readMigrations } from '@ziti/platform';
import { ExtensionService } from './authenticators/extensions.domain.ts';
import { CaService } from './cas/cas.domain.ts';
import type { PkiConfig } from './config.ts';
import { controllerPkiWiring } from './controller-pki/controller-pki.wiring.ts';
import { EnrollService } from './enrollments/enroll.domain.ts';
import { EnrollmentJwtIssuer } from './enrollments/enrollment-jwt.domain.ts';
import { EnrollmentService } from './enrollments/enrollments.domain.ts';
import { pkiOperations, routerEnrollmentOperations } from './operations.transport.ts';
import { routerEnrollmentsWiring } from './router-enrollments/router-enrollments.wiring.ts';
import { SessionCertificateService } from './session-certificates/session-certificates.domain.ts';
import { BusCredentialPort } from './shared/auth-client.adapter.ts';
import { authEventsWiring } from './shared/auth-events.wiring.ts';
import { pkiCalls } from './shared/calls.transport.ts';
import { pkiCoreWiring } from './shared/core.wiring.ts';
import { maintenanceWiring } from './shared/maintenance.wiring.ts';

export interface PkiServiceDeps {
  config: PkiConfig;
  database: Database;
  bus: Bus;
  logger: Logger;
  ownsBus?: boolean;
}

export const migrations = readMigrations(new URL('../migrations/', import.meta.url));

/**
 * Composition root of the pki-enrollment service: the shared core and each resource's wiring (its
 * `*.wiring.ts`, beside its code), composed into the runtime.
 */
export function createPkiService(deps: PkiServiceDeps): RunnableService {
  const core = pkiCoreWiring(deps);
  const { config, work } = core;
  const pki = controllerPkiWiring(core);
  const credentials = new BusCredentialPort(core.bus);
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
  const { routerEnrollments, calls: routerEnrollmentCallTable } = routerEnrollmentsWiring(core, { enrollments, pki });
  enroll.register(routerEnrollments.erottModule());
  return createServiceRuntime({
    owner: 'pki-enrollment',
    database: core.database,
    bus: core.bus,
    logger: core.logger,
    migrations,
    relay: core.relay,
    operations: {
      ...pkiOperations({ pki, cas, enrollments, enroll, extensions, sessionCertificates, jwts, credentials }),
      ...routerEnrollmentOperations(routerEnrollments, enroll),
    } satisfies OperationHandlers<'pki-enrollment'>,
    calls: {
      ...pkiCalls({ pki, cas, enrollments }),
      ...routerEnrollmentCallTable,
      ...maintenanceWiring(core, routerEnrollments),
    },
    subscriptions: [authEventsWiring(core)],
    onStart: () => pki.initialize(),
    ...(deps.ownsBus === undefined ? {} : { ownsBus: deps.ownsBus }),
  });
}
