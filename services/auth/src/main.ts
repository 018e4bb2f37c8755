import 'reflect-metadata';
import { RedisApiSessionStore, env, readEnv, runServiceMain, watchApiSessions } from '@ziti/platform';
import { createAuthService, migrations } from './app.ts';
import { readAuthConfig } from './config.ts';

await runServiceMain({
  name: 'auth',
  databaseVar: 'AUTH_DATABASE_URL',
  migrations,
  create: ({ database, bus, logger }) => {
    const redis = readEnv({ REDIS_URL: env.string(), REDIS_KEY_PREFIX: env.string('ziti:') });
    // About one command per event-loop turn (a login's session): nothing for auto-pipelining to batch.
    const sessions = new RedisApiSessionStore(redis.REDIS_URL, redis.REDIS_KEY_PREFIX, {
      logger,
      autoPipelining: false,
    });
    // auth owns the API sessions: it reports them (`ziti_api_sessions`), the gateways do not.
    watchApiSessions(sessions);
    return createAuthService({ config: readAuthConfig(), database, bus, sessions, logger });
  },
});
