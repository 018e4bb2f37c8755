import type { OperationKeyOf } from '@ziti/contracts';
import type { OperationHandlerMap } from '@ziti/platform';
import { authenticatorOperations } from './authenticators/authenticators.transport.ts';
import type { ExtensionService } from './authenticators/extensions.domain.ts';
import type { CaService } from './cas/cas.domain.ts';
import { caOperations } from './cas/cas.transport.ts';
import type { ControllerPkiService } from './controller-pki/controller-pki.domain.ts';
import { controllerPkiOperations } from './controller-pki/controller-pki.transport.ts';
import type { EnrollService } from './enrollments/enroll.domain.ts';
import { enrollOperations } from './enrollments/enroll.transport.ts';
import type { EnrollmentJwtIssuer } from './enrollments/enrollment-jwt.domain.ts';
import type { EnrollmentService } from './enrollments/enrollments.domain.ts';
import { enrollmentOperations } from './enrollments/enrollments.transport.ts';
import type { RouterEnrollmentOperationKey } from './router-enrollments/router-enrollments.transport.ts';
import type { SessionCertificateService } from './session-certificates/session-certificates.domain.ts';
import { sessionCertificateOperations } from './session-certificates/session-certificates.transport.ts';
import type { CredentialPort } from './shared/credentials.ports.ts';

export {
  type RouterEnrollmentOperationKey,
  routerEnrollmentOperations,
} from './router-enrollments/router-enrollments.transport.ts';

export interface PkiOperationDeps {
  pki: ControllerPkiService;
  cas: CaService;
  enrollments: EnrollmentService;
  enroll: EnrollService;
  extensions: ExtensionService;
  sessionCertificates: SessionCertificateService;
  jwts: EnrollmentJwtIssuer;
  credentials: CredentialPort;
}

/**
 * Every operation pki-enrollment owns but the router enrollments (`routerEnrollmentOperations`,
 * re-exported here), keyed `<api>.<operationId>`: the resources' slices merged. The return type
 * makes a missing key a compile error; app.ts checks the two tables together name each one.
 */
export function pkiOperations(
  deps: PkiOperationDeps,
): OperationHandlerMap<Exclude<OperationKeyOf<'pki-enrollment'>, RouterEnrollmentOperationKey>> {
  return {
    ...controllerPkiOperations(deps),
    ...authenticatorOperations(deps),
    ...caOperations(deps),
    ...enrollmentOperations(deps),
    ...enrollOperations(deps),
    ...sessionCertificateOperations(deps),
  };
}
