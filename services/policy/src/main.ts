import 'reflect-metadata';
import { configOrExit, exitOnStartFailure, runServiceMain } from '@ziti/platform';
import { createPolicyService, migrations } from './app.ts';
import { policyDatabaseVar, readPolicyProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
configOrExit('policy', () => readPolicyProcessConfig());

await runServiceMain({
  name: 'policy',
  databaseVar: policyDatabaseVar,
  migrations,
  create: ({ database, bus, logger }) => createPolicyService({ database, bus, logger }),
}).catch(exitOnStartFailure('policy'));
