import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleEntries, folderBytes, serviceRuntime, toolEntries } from '../../deploy/bundles.ts';
import { createTestDatabase, infra, uniqueName, waitFor } from '../support/infra.ts';
import { freePort } from '../../deploy/ports.ts';

/**
 * The image's two build steps for real (issue 25): `deploy/bundles.ts --out <dir>/dist --node-modules
 * <dir>/node_modules`, as the Dockerfile's build stage runs it, into a folder outside the repository (so
 * nothing resolves from the development tree); then services started from that folder with plain `node`
 * and the image's flags on the machine's Postgres, NATS and Redis: no tsx, no TypeScript, no esbuild
 * there to load.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const image = mkdtempSync(join(tmpdir(), 'ziti-bundles-'));
const dist = join(image, 'dist');
const modules = join(image, 'node_modules');
const cleanups: (() => Promise<void>)[] = [];
const children: ChildProcess[] = [];

/** Plain-HTTP GET on loopback: the status and body, or 0 when nothing answers. */
async function get(port: number, path: string): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2_000) });
    return { status: res.status, text: await res.text() };
  } catch {
    return { status: 0, text: '' };
  }
}

/** Runs a bundle as the image does: `node <serviceRuntime flags> dist/<service>.mjs`, from the image folder. */
function runBundle(
  service: keyof typeof bundleEntries | keyof typeof toolEntries,
  env: Record<string, string>,
  args: string[] = [],
) {
  const flags = service in bundleEntries ? serviceRuntime.nodeArgs[service as keyof typeof bundleEntries] : [];
  const child = spawn(process.execPath, [...flags, join('dist', `${service}.mjs`), ...args], {
    cwd: image,
    // Only what the service is given: no NODE_OPTIONS (no loader), no development PATH entries.
    env: { PATH: '/usr/bin:/bin', ...serviceRuntime.env, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  children.push(child);
  return { child, exited, output: () => output };
}

beforeAll(async () => {
  // Nothing above the folder may hold a node_modules: the bundles must find everything in the copied one.
  for (let dir = dirname(image); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules')))
      throw new Error(`${dir}/node_modules exists: the test would not prove much`);
    if (dirname(dir) === dir) break;
  }
  await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', join(root, 'deploy', 'bundles.ts'), '--out', dist, '--node-modules', modules],
    { cwd: root, timeout: 110_000 },
  );
}, 120_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.allSettled(cleanups.map((c) => c()));
  rmSync(image, { recursive: true, force: true });
});

describe('the image build (deploy/bundles.ts)', () => {
  it('bundles every service and copies only production packages', () => {
    for (const service of Object.keys(bundleEntries))
      expect(existsSync(join(dist, `${service}.mjs`)), service).toBe(true);
    // The migrations travel with the bundles, at their repository paths.
    expect(readdirSync(join(dist, 'services', 'auth', 'migrations')).some((f) => f.endsWith('.sql'))).toBe(true);
    expect(readdirSync(join(dist, 'packages', 'platform', 'src', 'db', 'migrations')).length).toBeGreaterThan(0);
    const manifest = JSON.parse(readFileSync(join(dist, 'bundles.json'), 'utf8')) as { packages: string[] };
    expect(manifest.packages).toEqual(expect.arrayContaining(['pg', 'nats', 'ioredis', '@node-rs/argon2']));
    expect(manifest.packages.some((p) => p.startsWith('@ziti/'))).toBe(false);

    const top = readdirSync(modules).flatMap((e) =>
      e.startsWith('@') ? readdirSync(join(modules, e)).map((s) => `${e}/${s}`) : [e],
    );
    for (const name of ['pg', 'nats', 'ioredis', 'express', 'zod', 'pino', 'prom-client', '@node-rs/argon2'])
      expect(top, name).toContain(name);
    // The native argon2 build of this platform came along with its loader.
    expect(top.some((p) => p.startsWith('@node-rs/argon2-'))).toBe(true);
    for (const dev of ['tsx', 'typescript', 'esbuild', 'vitest', 'eslint', 'prettier', 'autocannon', 'testcontainers'])
      expect(top, dev).not.toContain(dev);
    expect(top.filter((p) => p.startsWith('@types/') || p.startsWith('@esbuild/') || p.startsWith('@ziti/'))).toEqual(
      [],
    );
    // PGlite is for `npm start` only; the services' bundles hold a stand-in that refuses to open one.
    expect(top).not.toContain('@electric-sql/pglite');
    expect(existsSync(join(modules, '.bin'))).toBe(false);
    console.log(`pruned node_modules: ${top.length} packages, ${(folderBytes(modules) / 2 ** 20).toFixed(1)} MiB`);
  });

  it('runs policy and auth from the bundles, with plain node, on Postgres, NATS and Redis', async () => {
    const namespace = uniqueName('bundles');
    const policyDb = await createTestDatabase('bundle_policy');
    cleanups.push(policyDb.drop);
    const authDb = await createTestDatabase('bundle_auth');
    cleanups.push(authDb.drop);
    const common = { NATS_URL: infra.natsUrl, ZITI_BUS_NAMESPACE: namespace };
    const ports = { policy: await freePort(), auth: await freePort() };
    const policy = runBundle('policy', {
      ...common,
      POLICY_DATABASE_URL: policyDb.url,
      HEALTH_PORT: String(ports.policy),
    });
    const auth = runBundle('auth', {
      ...common,
      AUTH_DATABASE_URL: authDb.url,
      REDIS_URL: infra.redisUrl,
      REDIS_KEY_PREFIX: `${namespace}:`,
      ZITI_SECRET_KEY: uniqueName('secret-key-for-the-bundle-test'),
      ZITI_ADMIN_USERNAME: 'admin',
      ZITI_ADMIN_PASSWORD: uniqueName('pw'),
      ZITI_ADVERTISED_ADDRESS: 'localhost:1280',
      HEALTH_PORT: String(ports.auth),
    });
    for (const [name, run] of [
      ['policy', policy],
      ['auth', auth],
    ] as const) {
      const port = ports[name];
      await waitFor(
        async () => {
          if (run.child.exitCode !== null)
            throw new Error(`${name} exited with ${run.child.exitCode}:\n${run.output()}`);
          return (await get(port, '/readyz')).status === 200;
        },
        `${name} (bundle) to be ready`,
        90_000,
        100,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${run.output()}`);
      });
      const metrics = await get(port, '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toContain('process_resident_memory_bytes');
      // Nothing but the bundle and the flags on the command line: no loader.
      const cmdline = readFileSync(`/proc/${run.child.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      expect(cmdline.slice(1)).toEqual([...serviceRuntime.nodeArgs[name], join('dist', `${name}.mjs`)]);
    }
    // The migrations were found beside the bundles: the platform's and the service's own.
    const c = new pg.Client({ connectionString: authDb.url });
    await c.connect();
    try {
      const versions = (await c.query<{ version: string }>('select version from schema_migrations')).rows.map(
        (r) => r.version,
      );
      expect(versions.some((v) => v.startsWith('platform:'))).toBe(true);
      expect(versions.some((v) => !v.startsWith('platform:'))).toBe(true);
      // auth created its default admin, hashing the password on its argon2 threads (the native module).
      const admins = await c.query('select 1 from identities where is_default_admin');
      expect(admins.rowCount).toBe(1);
    } finally {
      await c.end();
    }
    for (const run of [policy, auth]) run.child.kill('SIGTERM');
    expect(await policy.exited).toBe(0);
    expect(await auth.exited).toBe(0);
  }, 120_000);

  it('runs the operator’s command from its bundle, as the image’s ziti-edge-ops does', async () => {
    const run = runBundle('ziti-edge-ops', {}, ['--help']);
    const code = await Promise.race([run.exited, new Promise((r) => setTimeout(() => r('timeout'), 30_000))]);
    expect(code, run.output()).toBe(0);
    expect(run.output()).toMatch(/check-config/);
    expect(run.output()).toMatch(/doctor/);
  }, 60_000);

  it('applies a service’s migrations and exits with `<bundle> migrate`, as the chart’s Jobs do', async () => {
    const db = await createTestDatabase('bundle_inventory');
    cleanups.push(db.drop);
    const run = runBundle('inventory', { NATS_URL: infra.natsUrl, INVENTORY_DATABASE_URL: db.url }, ['migrate']);
    const code = await Promise.race([run.exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))]);
    expect(code, run.output()).toBe(0);
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      expect((await c.query('select 1 from schema_migrations')).rowCount).toBeGreaterThan(1);
    } finally {
      await c.end();
    }
  }, 90_000);
});
