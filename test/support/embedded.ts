import { join } from 'node:path';
import { SecretBox, createLogger, openDatabase } from '@ziti/platform';
import { composeEmbedded } from '@ziti/standalone/compose';
import { apiCaller } from './e2e.ts';
import { createHttpClient } from './http.ts';
import { uniqueName } from './infra.ts';
import { certificatesFromPkcs7Base64 } from './pkcs7.ts';
import { loadSpecValidator } from './spec-validator.ts';
import { freePort } from '../../deploy/ports.ts';

/**
 * The embedded mode (`npm start`) inside the test process, with the same composition
 * (apps/standalone/src/compose.ts): one PGlite per service (in memory, or under `dataDir`), the in-process bus, in-memory
 * API sessions, the gateway on a loopback port. Driven over HTTPS like the cluster fixture, every
 * response validated against the specs.
 */
export async function startEmbedded(options: { dataDir?: string } = {}) {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ZITI_SECRET_KEY: SecretBox.generateSecret(),
    ZITI_ADMIN_USERNAME: 'admin',
    ZITI_ADMIN_PASSWORD: uniqueName('pw'),
    ZITI_BIND: '127.0.0.1',
    ZITI_PORT: String(port),
    ZITI_ADVERTISED_ADDRESS: `localhost:${port}`,
    ZITI_AUTH_RATE_LIMIT: '0',
    // The router edge on a free port (its default, 6262, is one per machine).
    ZITI_CTRL_PORT: '0',
  };
  const { controller, fabric } = await composeEmbedded({
    env,
    logger: createLogger('embedded', process.env.LOG_LEVEL ?? 'warn'),
    database: (name) =>
      openDatabase(options.dataDir ? { pgliteDir: join(options.dataDir, name) } : { pgliteMemory: true }),
  });
  await controller.start();
  const stop = () => controller.stop();

  const baseUrl = `https://127.0.0.1:${port}`;
  const insecure = createHttpClient(baseUrl, undefined);
  const caPems = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text);
  const http = createHttpClient(baseUrl, caPems.join(''));
  const validator = loadSpecValidator();

  const call = apiCaller(http, validator);

  const login = await call('management', {
    method: 'POST',
    path: '/authenticate?method=password',
    body: { username: env.ZITI_ADMIN_USERNAME, password: env.ZITI_ADMIN_PASSWORD },
  });
  if (login.status !== 200) {
    await stop();
    throw new Error(`admin login failed: ${login.status} ${login.text}`);
  }
  return {
    call,
    caPems,
    adminToken: login.json.data.token as string,
    adminUsername: env.ZITI_ADMIN_USERNAME!,
    adminPassword: env.ZITI_ADMIN_PASSWORD!,
    port,
    /** The router edge's own control port. */
    ctrlPort: fabric.port(),
    stop,
  };
}

export type Embedded = Awaited<ReturnType<typeof startEmbedded>>;
