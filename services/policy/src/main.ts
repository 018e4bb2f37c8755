import 'reflect-metadata';
import { runServiceMain } from '@ziti/platform';
import { createPolicyService, migrations } from './app.ts';

await runServiceMain({
  name: 'policy',
  databaseVar: 'POLICY_DATABASE_URL',
  migrations,
  create: ({ database, bus, logger }) => createPolicyService({ database, bus, logger }),
});
