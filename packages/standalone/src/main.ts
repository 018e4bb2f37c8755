import 'reflect-metadata';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createAuthService } from '@ziti/auth/app';
import { readAuthConfig } from '@ziti/auth/config';
import { createGateway } from '@ziti/gateway/app';
import { readGatewayConfig } from '@ziti/gateway/config';
import { createInventoryService } from '@ziti/inventory/app';
import { createPkiService } from '@ziti/pki-enrollment/app';
import { readPkiConfig } from '@ziti/pki-enrollment/config';
import {
  InProcessBus,
  MemoryApiSessionStore,
  type RunnableService,
  SecretBox,
  createLogger,
  openDatabase,
  runProcess,
} from '@ziti/platform';
import { createPolicyService } from '@ziti/policy/app';

/**
 * `npm start`: the whole controller in one process for a newcomer. Same domain code as the
 * cluster; only the composition differs: PGlite per service under the data directory, the
 * in-process bus, in-memory API sessions. Secrets it has to invent are kept in the data
 * directory (mode 0600) so data survives a restart.
 */
const logger = createLogger('controller');
const dataDir = resolve(process.env.ZITI_DATA_DIR ?? './data');
mkdirSync(dataDir, { recursive: true });

function keptSecret(file: string, make: () => string): { value: string; created: boolean } {
  const path = join(dataDir, file);
  if (existsSync(path)) return { value: readFileSync(path, 'utf8').trim(), created: false };
  const value = make();
  writeFileSync(path, `${value}\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  return { value, created: true };
}

const env: NodeJS.ProcessEnv = { ...process.env };
env.ZITI_SECRET_KEY ??= keptSecret('secret.key', SecretBox.generateSecret).value;
let generatedPassword: string | undefined;
if (!env.ZITI_ADMIN_PASSWORD) {
  const kept = keptSecret('admin-password', () => SecretBox.generateSecret().slice(0, 20));
  env.ZITI_ADMIN_PASSWORD = kept.value;
  if (kept.created) generatedPassword = kept.value;
}
env.ZITI_ADMIN_USERNAME ??= 'admin';

const bus = new InProcessBus({ holdEvents: true });
const sessions = new MemoryApiSessionStore();
const db = (name: string) => openDatabase({ pgliteDir: join(dataDir, name) });

const gatewayConfig = readGatewayConfig(env);
const services: RunnableService[] = [
  createPkiService({
    config: readPkiConfig(env),
    database: await db('pki'),
    bus,
    logger: logger.child({ service: 'pki-enrollment' }),
    ownsBus: false,
  }),
  createAuthService({
    config: readAuthConfig(env),
    database: await db('auth'),
    bus,
    sessions,
    logger: logger.child({ service: 'auth' }),
    ownsBus: false,
  }),
  createPolicyService({
    database: await db('policy'),
    bus,
    logger: logger.child({ service: 'policy' }),
    ownsBus: false,
  }),
  createInventoryService({
    database: await db('inventory'),
    bus,
    logger: logger.child({ service: 'inventory' }),
    ownsBus: false,
  }),
];
const gateway = createGateway({ config: gatewayConfig, bus, sessions, logger: logger.child({ service: 'gateway' }) });

const controller: RunnableService = {
  name: 'controller',
  async start() {
    for (const s of services) await s.start();
    bus.openEvents();
    await gateway.start();
    const url = `https://${gatewayConfig.advertisedAddress}`;
    const lines = [
      '',
      `  Ziti edge controller is up at ${url}`,
      `    client API:     ${url}/edge/client/v1`,
      `    management API: ${url}/edge/management/v1`,
      `  Log in:  ziti edge login ${gatewayConfig.advertisedAddress} -u ${env.ZITI_ADMIN_USERNAME} -p <password>`,
      generatedPassword
        ? `  The admin password was generated and is shown only now: ${generatedPassword}\n  (it is also kept in ${join(dataDir, 'admin-password')})`
        : `  The admin password is ZITI_ADMIN_PASSWORD or the one kept in ${join(dataDir, 'admin-password')}.`,
      `  Data directory: ${dataDir}`,
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  },
  async ready() {
    return (await Promise.all([...services, gateway].map((s) => s.ready()))).every(Boolean);
  },
  async stop() {
    await gateway.stop();
    for (const s of [...services].reverse()) await s.stop();
    await bus.close();
  },
};

await runProcess(controller, logger, Number(env.HEALTH_PORT ?? 0));
