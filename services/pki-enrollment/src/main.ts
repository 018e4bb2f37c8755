import 'reflect-metadata';
import { configOrExit, exitOnStartFailure, runServiceMain } from '@ziti/platform';
import { createPkiService, migrations } from './app.ts';
import { pkiDatabaseVar, readPkiProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
const config = configOrExit('pki-enrollment', () =>
  readPkiProcessConfig(process.env, { migrateOnly: process.argv[2] === 'migrate' }),
);

await runServiceMain({
  name: 'pki-enrollment',
  databaseVar: pkiDatabaseVar,
  migrations,
  create: ({ database, bus, logger }) => createPkiService({ config, database, bus, logger }),
}).catch(exitOnStartFailure('pki-enrollment'));
