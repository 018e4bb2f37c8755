import { randomBytes } from 'node:crypto';
import { migrations as auditMigrations } from '@ziti/audit/app';
import { migrations as authMigrations } from '@ziti/auth/app';
import { migrations as inventoryMigrations } from '@ziti/inventory/app';
import { migrations as pkiMigrations } from '@ziti/pki-enrollment/app';
import { type Database, type Migration, migrate, openDatabase, queryRows } from '@ziti/platform';
import { migrations as policyMigrations } from '@ziti/policy/app';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, uniqueName } from '../../../test/support/infra.ts';
import type { DatabaseService } from '../src/cli.ts';
import { run } from '../src/run.ts';
import { type Io, databaseVars } from '../src/support.ts';

/**
 * `replay-parked` composes each service in its own process (its consumers, this build's handlers)
 * on the service's database: an event none of them knows stays parked, and is reported with why.
 */
const services: [DatabaseService, Migration[], string][] = [
  ['auth', authMigrations, 'auth-from-inventory'],
  ['pki-enrollment', pkiMigrations, 'pki-enrollment-from-auth'],
  ['policy', policyMigrations, 'policy-from-auth'],
  ['inventory', inventoryMigrations, 'inventory-from-auth'],
  ['audit', auditMigrations, 'audit-from-auth'],
];
const env: NodeJS.ProcessEnv = {
  NATS_URL: infra.natsUrl,
  ZITI_BUS_NAMESPACE: uniqueName('ops'),
  REDIS_URL: infra.redisUrl,
  REDIS_KEY_PREFIX: `${uniqueName('ops')}:`,
  ZITI_SECRET_KEY: randomBytes(32).toString('base64url'),
};
const drops: (() => Promise<void>)[] = [];
const databases = new Map<DatabaseService, Database>();

beforeAll(async () => {
  for (const [service, migrations, consumer] of services) {
    const created = await createTestDatabase(`ops_parked_${service.replace('-', '_')}`);
    drops.push(created.drop);
    env[databaseVars[service]] = created.url;
    const database = await openDatabase({ url: created.url, poolSize: 1 });
    await migrate(database, migrations);
    const source = consumer.split('-from-')[1]!;
    await queryRows(
      database.db,
      `insert into parked_events (consumer, source, position, type, version, reason, envelope)
       values ($1, $2, 7, 'thing.frobnicated', 1, 'event type thing.frobnicated is unknown to this version', $3::jsonb)`,
      [
        consumer,
        source,
        JSON.stringify({ id: `${source}:7`, type: 'thing.frobnicated', version: 1, source, sequence: 7, data: {} }),
      ],
    );
    databases.set(service, database);
  }
});

afterAll(async () => {
  for (const database of databases.values()) await database.close();
  for (const drop of drops) await drop();
});

describe('replay-parked', () => {
  it('composes every service, and reports what is still parked and why', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io: Io = { env, out: (l) => out.push(l), err: (l) => err.push(l), readStdin: async () => '' };
    expect(await run(['replay-parked', '--all'], io)).toBe(1);
    expect(out).toEqual(
      services.flatMap(([service, , consumer]) => [
        `${service} ${consumer}: applied 0, 1 still parked`,
        `  1 event of ${consumer.split('-from-')[1]}: event type thing.frobnicated is unknown to this version`,
      ]),
    );
    expect(err).toEqual(['5 events still parked: see the reasons above']);
    // Nothing was taken away that was not applied.
    for (const database of databases.values())
      expect(await queryRows(database.db, 'select count(*)::int as n from parked_events')).toEqual([{ n: 1 }]);
  }, 60_000);
});
