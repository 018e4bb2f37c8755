import 'reflect-metadata';
import { runServiceMain } from '@ziti/platform';
import { createPkiService, migrations } from './app.ts';
import { readPkiConfig } from './config.ts';

await runServiceMain({
  name: 'pki-enrollment',
  databaseVar: 'PKI_DATABASE_URL',
  migrations,
  create: ({ database, bus, logger }) => createPkiService({ config: readPkiConfig(), database, bus, logger }),
});
