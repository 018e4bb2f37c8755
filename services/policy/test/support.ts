import type { IdentityState } from '@ziti/contracts';
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
