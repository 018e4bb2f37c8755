import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../support/http.ts';
import { infra, uniqueName } from '../support/infra.ts';
import { certificatesFromPkcs7Base64 } from '../support/pkcs7.ts';
import { freePortPair } from '../../deploy/ports.ts';

/**
 * `npm run cluster` started, stopped and started again over the same databases: the second start
 * reuses the secrets the first one kept (0600 in its data directory), so pki-enrollment reads its
 * keys and the password the first start printed still logs in. Two gateway replicas, each on its
 * own port (the base port + its index), both answer.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const namespace = uniqueName('restart');
const parentDir = mkdtempSync(join(tmpdir(), 'ziti-cluster-restart-'));
const dataDir = join(parentDir, 'cluster');
let running: ChildProcess | undefined;

interface Started {
  child: ChildProcess;
  output: string;
  gatewayUrls: string[];
  password: string | undefined;
}

/** Runs `npm run cluster` (its script) until it prints that the cluster is up. */
async function startCluster(port: number, dir = dataDir): Promise<Started> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    POSTGRES_URL: infra.postgresUrl,
    REDIS_URL: infra.redisUrl,
    NATS_URL: infra.natsUrl,
    ZITI_PORT: String(port),
    ZITI_CLUSTER_NAMESPACE: namespace,
    ZITI_CLUSTER_DATA_DIR: dir,
    ZITI_CLUSTER_REPLICAS: 'gateway=2',
    LOG_LEVEL: 'warn',
  };
  delete env.ZITI_SECRET_KEY;
  delete env.ZITI_ADMIN_PASSWORD;
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'deploy', 'local-cluster.ts')], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running = child;
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`the cluster did not come up:\n${output}`)), 170_000);
    const onData = () => {
      if (!/secrets kept in/.test(output)) return;
      clearTimeout(deadline);
      child.stdout?.off('data', onData);
      resolve();
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(deadline);
      reject(new Error(`the cluster exited with ${code}:\n${output}`));
    });
  });
  const gatewayUrls = [...output.matchAll(/gateway #\d+: (https:\/\/\S+)/g)].map((m) => m[1]!);
  const password = /admin password: (\S+) \(/.exec(output)?.[1];
  return { child, output, gatewayUrls, password };
}

async function stopCluster(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await exited;
  running = undefined;
  return code;
}

async function login(url: string, password: string) {
  const insecure = createHttpClient(url, undefined);
  const ca = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text).join('');
  const http = createHttpClient(url, ca);
  return http({
    method: 'POST',
    path: '/edge/management/v1/authenticate?method=password',
    body: { username: 'admin', password },
  });
}

afterAll(async () => {
  if (running && running.exitCode === null) await stopCluster(running);
  const c = new pg.Client({ connectionString: infra.postgresUrl });
  await c.connect();
  try {
    const prefix = namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    for (const db of ['auth', 'pki', 'policy', 'inventory'])
      await c.query(`drop database if exists "${prefix}_${db}" with (force)`);
  } finally {
    await c.end();
  }
  rmSync(parentDir, { recursive: true, force: true });
}, 60_000);

describe('npm run cluster, twice', () => {
  it('keeps its secrets and logs in with the printed password after a restart', async () => {
    const port = await freePortPair();
    const first = await startCluster(port);
    expect(first.gatewayUrls).toEqual([`https://localhost:${port}`, `https://localhost:${port + 1}`]);
    expect(first.output).toMatch(/generated at this first start/);
    const password = first.password!;
    expect(password).toBeTruthy();
    for (const file of ['secret.key', 'admin-password'])
      expect(statSync(join(dataDir, file)).mode & 0o777, file).toBe(0o600);
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    for (const url of first.gatewayUrls) {
      const res = await login(url, password);
      expect(res.status, `${url} ${res.text}`).toBe(200);
    }
    expect(await stopCluster(first.child)).toBe(0);

    // The same port again, unless another suite's listener took it meanwhile (ports are picked per
    // process): then a fresh pair, since what is tested is what the data directory kept.
    let second: Started | undefined;
    for (let tries = 0; !second; tries++) {
      second = await startCluster(tries === 0 ? port : await freePortPair()).catch((err: Error) => {
        if (tries < 2 && /EADDRINUSE/.test(err.message)) return undefined;
        throw err;
      });
    }
    expect(second.output).not.toMatch(/generated/);
    expect(second.password).toBe(password);
    for (const url of second.gatewayUrls) {
      const res = await login(url, password);
      expect(res.status, `${url} ${res.text}`).toBe(200);
      expect(typeof res.json.data.token).toBe('string');
    }
    expect(await stopCluster(second.child)).toBe(0);

    // The same databases without the kept key: refused at once, saying why, instead of failing later.
    const refused = await startCluster(port, join(parentDir, 'elsewhere')).then(
      () => undefined,
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/exited with 1/);
    expect(refused).toMatch(/no secret key is kept/);
  }, 400_000);
});
