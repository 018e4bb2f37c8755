import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
import { type Database, migrate, openDatabase } from '@ziti/platform';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';

/** A policy database of its own on the local Postgres, migrated; `drop` closes and drops it. */
export async function policyTestDatabase(
  prefix: string,
  poolSize = 12,
): Promise<{ database: Database; drop: () => Promise<void> }> {
  const db = await createTestDatabase(prefix);
  const database = await openDatabase({ url: db.url, poolSize });
  await migrate(database, migrations);
  return {
    database,
    drop: async () => {
      await database.close();
      await db.drop();
    },
  };
}

export const fixedAt = '2026-01-01T00:00:00.000Z';

/** An identity as auth publishes it, with the given role attributes. */
export const identityFixture = (id: string, roleAttributes: string[]): IdentityState => ({
  id,
  name: `n-${id}`,
  typeId: 'User',
  isAdmin: false,
  isDefaultAdmin: false,
  roleAttributes,
  externalId: null,
  authPolicyId: 'default',
  disabled: false,
  disabledAt: null,
  disabledUntil: null,
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});

/** A service as inventory publishes it, with the given role attributes. */
export const serviceFixture = (id: string, roleAttributes: string[]): ServiceState => ({
  id,
  name: `n-${id}`,
  terminatorStrategy: 'smartrouting',
  roleAttributes,
  configs: [],
  encryptionRequired: true,
  maxIdleTimeMillis: 0,
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});

/** An edge router as inventory publishes it, with the given role attributes. */
export const routerFixture = (id: string, roleAttributes: string[]): EdgeRouterState => ({
  id,
  name: `n-${id}`,
  roleAttributes,
  isTunnelerEnabled: false,
  isVerified: true,
  disabled: false,
  noTraversal: false,
  cost: 0,
  fingerprint: null,
  hostname: '',
  supportedProtocols: {},
  appData: {},
  tags: {},
  createdAt: fixedAt,
  updatedAt: fixedAt,
});
