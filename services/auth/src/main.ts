import 'reflect-metadata';
import {
  RedisApiSessionStore,
  configOrExit,
  exitOnStartFailure,
  runServiceMain,
  watchApiSessions,
} from '@ziti/platform';
import { createAuthService, migrations } from './app.ts';
import { authDatabaseVar, readAuthProcessConfig } from './config.ts';

// Every variable is checked before anything connects: one message naming every problem, exit 1.
const config = configOrExit('auth', () =>
  readAuthProcessConfig(process.env, { migrateOnly: process.argv[2] === 'migrate' }),
);

await runServiceMain({
  name: 'auth',
  databaseVar: authDatabaseVar,
  migrations,
  create: ({ database, bus, logger }) => {
    // About one command per event-loop turn (a login's session): nothing for auto-pipelining to batch.
    const sessions = new RedisApiSessionStore(config.redis.url, config.redis.keyPrefix, {
      logger,
      autoPipelining: false,
      // A Redis that keeps nothing over a restart loses every API session: said at start (issue 25).
      reportPersistence: true,
    });
    // auth owns the API sessions: it reports them (`ziti_api_sessions`), the gateways do not.
    watchApiSessions(sessions);
    return createAuthService({ config: config.settings, database, bus, sessions, logger });
  },
}).catch(exitOnStartFailure('auth'));
