import 'reflect-metadata';
import { configOrExit, exitOnStartFailure, runServiceMain } from '@ziti/platform';
import { createAuditService, migrations } from './app.ts';
import { auditDatabaseVar, readAuditProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
const config = configOrExit('audit', () =>
  readAuditProcessConfig(process.env, { migrateOnly: process.argv[2] === 'migrate' }),
);

await runServiceMain({
  name: 'audit',
  databaseVar: auditDatabaseVar,
  migrations,
  create: ({ database, bus, logger }) => createAuditService({ config, database, bus, logger }),
}).catch(exitOnStartFailure('audit'));
