import 'reflect-metadata';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunnableService } from '@ziti/platform';
import { configOrExit, readProcessEnv } from '@ziti/platform/config';
import { SecretBox } from '@ziti/platform/secret-box';
import { type EmbeddedDatabase, embeddedDatabases, seedDatabase } from './template.ts';

/**
 * `npm start`: the whole controller in one process for a newcomer. Same domain code as the
 * cluster; only the composition differs: PGlite per service under the data directory, the
 * in-process bus, in-memory API sessions. Secrets it has to invent are kept in the data
 * directory (mode 0600) so data survives a restart. Nothing in the data directory is for other
 * local users: everything this process creates is 0600 (directories 0700), and what an earlier
 * version left open is closed at start.
 */
process.umask(0o077);
// The process-wide variables (LOG_LEVEL, LOG_FORMAT, HEALTH_BIND) are checked before anything
// starts: one message naming every problem, exit 1, as every clustered service does.
configOrExit('controller', () => readProcessEnv(process.env));
const dataDir = resolve(process.env.ZITI_DATA_DIR ?? './data');
mkdirSync(dataDir, { recursive: true, mode: 0o700 });

// A database that is not there yet starts from what `--prepare` made for it once per install
// (apps/standalone/src/template.ts): its ready copy, moved in, or a copy of its template, both with
// its migrations applied (initdb only if no template could be made). Copies run on libuv's threads
// while the controller's modules load, which is why these are imported only now.
const databases = Object.keys(embeddedDatabases) as EmbeddedDatabase[];
const seeding = Promise.all(databases.map((name) => seedDatabase(dataDir, name)));
const composition = Promise.all([import('./compose.ts'), import('@ziti/platform')]);
composition.catch(() => undefined); // awaited below
// Each database opens (PGlite: its WebAssembly instance, Postgres' start) as soon as it is laid down
// and PGlite is loaded, while the services' modules go on loading.
const { openDatabase, restrictToOwner } = await import('@ziti/platform/db/database');
const seeded = await seeding;
restrictToOwner(dataDir);
const opening = new Map(databases.map((name) => [name, openDatabase({ pgliteDir: join(dataDir, name) })]));
// Taken by composeEmbedded, which closes the others if one fails; not an unhandled rejection meanwhile.
for (const db of opening.values()) db.catch(() => undefined);
const [{ composeEmbedded }, { createLogger, runProcess }] = await composition;
const logger = createLogger('controller');
for (const [i, s] of seeded.entries())
  if (!s.seeded && s.error) logger.warn({ err: s.error }, `no template database cluster for ${databases[i]}: initdb`);
  else if (s.seeded) logger.debug({ database: databases[i], from: s.from }, 'database seeded');

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

const {
  controller: services,
  gatewayConfig,
  fabric,
} = await composeEmbedded({
  env,
  logger,
  database: (name) => opening.get(name)!,
}).catch(async (err: unknown) => {
  // A configuration it refuses: the databases opened meanwhile are closed before the exit.
  await Promise.allSettled([...opening.values()].map(async (db) => (await db).close()));
  throw err;
});

// Health and Prometheus metrics (`/healthz`, `/readyz`, `/metrics`) are plain HTTP on HEALTH_PORT;
// off unless it is set, like in the cluster.
const healthPort = Number(env.HEALTH_PORT ?? 0);

const controller: RunnableService = {
  ...services,
  async start() {
    await services.start();
    const url = `https://${gatewayConfig.advertisedAddress}`;
    const lines = [
      '',
      `  Ziti edge controller is up at ${url}`,
      `    client API:     ${url}/edge/client/v1`,
      `    management API: ${url}/edge/management/v1`,
      `    router control channel: tls:${gatewayConfig.advertisedAddress.replace(/:\d+$/, '')}:${fabric.port()} (a router's ctrl.endpoint)`,
      `  Log in:  ziti edge login ${gatewayConfig.advertisedAddress} -u ${env.ZITI_ADMIN_USERNAME} -p <password>`,
      generatedPassword
        ? `  The admin password was generated and is shown only now: ${generatedPassword}\n  (it is also kept in ${join(dataDir, 'admin-password')})`
        : `  The admin password is ZITI_ADMIN_PASSWORD or the one kept in ${join(dataDir, 'admin-password')}.`,
      healthPort > 0
        ? `  Metrics: http://${env.HEALTH_BIND ?? '127.0.0.1'}:${healthPort}/metrics (health: /healthz, /readyz)`
        : '  Metrics: set HEALTH_PORT to serve /metrics (and /healthz, /readyz) on plain HTTP',
      `  Data directory: ${dataDir}`,
      '',
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  },
};

await runProcess(controller, logger, healthPort);
