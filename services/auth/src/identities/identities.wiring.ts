import type { EnrollmentPort } from '../credentials/credentials.domain.ts';
import type { AuthCore } from '../shared/core.wiring.ts';
import { IdentityService } from './identities.domain.ts';
import { BusServiceExistence } from './inventory-services.adapter.ts';

/** Identities: created with their enrollments (pki-enrollment), hosting services checked with inventory. */
export const identitiesWiring = (core: AuthCore, enrollments: EnrollmentPort) =>
  new IdentityService(
    core.work,
    core.sessions,
    core.ttl,
    undefined,
    enrollments,
    core.read,
    new BusServiceExistence(core.bus),
  );
