import { type Database, type Db, type ServiceMaintenance, databaseMaintenance } from '@ziti/platform';
import type { AuthMaintenance } from './auth-maintenance.domain.ts';

/** The tables auth owns that `/summary` reports, each a table name with an optional `where` written in code. */
export const summaryTables: Record<string, string> = {
  identities: 'identities',
  identityTypes: 'identity_types',
  authenticators: 'authenticators',
  authPolicies: 'auth_policies',
  externalJwtSigners: 'external_jwt_signers',
  mfas: 'mfa',
};

/**
 * auth's maintenance over its database (the platform's `databaseMaintenance`); its live-session
 * count, its integrity check (Router identities against inventory's edge routers, the read model of
 * outstanding enrollments against pki-enrollment) and its identity states are the domain's
 * `AuthMaintenance`.
 */
export function pgMaintenance(
  database: Database,
  maintenance?: Pick<AuthMaintenance<Db>, 'summaryCounts' | 'check' | 'identityStates'>,
): ServiceMaintenance {
  return databaseMaintenance({
    service: 'auth',
    database,
    summaryTables,
    ...(maintenance
      ? {
          summaryCounts: () => maintenance.summaryCounts(),
          integrity: (fix: boolean) => maintenance.check(fix),
          entityStates: { identity: (request, tx) => maintenance.identityStates(request, tx) },
        }
      : {}),
  });
}
