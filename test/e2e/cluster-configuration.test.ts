import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { serviceNames } from '../../deploy/local-cluster.ts';
import { createHttpClient } from '../support/http.ts';
import { infra, uniqueName } from '../support/infra.ts';
import { certificatesFromPkcs7Base64 } from '../support/pkcs7.ts';
import { freePort } from '../../deploy/ports.ts';

/**
 * `npm run cluster` (issue 25) passes the documented configuration of its environment on to every process
 * (`ZITI_AUTH_RATE_LIMIT` set for it is applied by the gateway), keeps what it sets itself, and prints each
 * process's health and metrics address and the gateway's API URLs once the cluster is up.
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const namespace = uniqueName('clustercfg');
const dataDir = mkdtempSync(join(tmpdir(), 'ziti-cluster-config-'));
let running: ChildProcess | undefined;

/** The environment a process was started with, from /proc. */
function environmentOf(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean)) {
    const at = entry.indexOf('=');
    out[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return out;
}

afterAll(async () => {
  if (running && running.exitCode === null) {
    const exited = new Promise((resolve) => running!.once('exit', resolve));
    running.kill('SIGTERM');
    await exited;
  }
  const c = new pg.Client({ connectionString: infra.postgresUrl });
  await c.connect();
  try {
    const prefix = namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_');
    for (const db of ['auth', 'pki', 'policy', 'inventory', 'audit'])
      await c.query(`drop database if exists "${prefix}_${db}" with (force)`);
  } finally {
    await c.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe('npm run cluster passes its configuration on', () => {
  it('the gateway applies ZITI_AUTH_RATE_LIMIT; every process gets the documented variables; addresses are printed', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      POSTGRES_URL: infra.postgresUrl,
      REDIS_URL: infra.redisUrl,
      NATS_URL: infra.natsUrl,
      ZITI_PORT: String(port),
      ZITI_CLUSTER_NAMESPACE: namespace,
      ZITI_CLUSTER_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // Documented settings the cluster used to drop.
      ZITI_AUTH_RATE_LIMIT: '1',
      ZITI_AUTH_RATE_BURST: '3',
      ZITI_TOTP_ISSUER: 'cluster-config-test',
      DATABASE_POOL_SIZE: '4',
      // Set by the cluster itself: never taken from the environment.
      ZITI_BUS_NAMESPACE: 'not-the-clusters',
      HEALTH_PORT: '1',
    };
    delete env.ZITI_SECRET_KEY;
    delete env.ZITI_ADMIN_PASSWORD;
    delete env.ZITI_CLUSTER_REPLICAS;
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'deploy', 'local-cluster.ts')], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running = child;
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`the cluster did not come up:\n${output}`)), 170_000);
      const onData = () => {
        if (!/secrets kept in/.test(output)) return;
        clearTimeout(deadline);
        resolve();
      };
      child.stdout!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(deadline);
        reject(new Error(`the cluster exited with ${code}:\n${output}`));
      });
    });

    // One line per process: pid, health and metrics; each answers.
    const lines = [
      ...output.matchAll(
        /^ {2}(\S+) #(\d+)\s+pid (\d+)\s+health (http:\/\/127\.0\.0\.1:\d+)\/healthz\s+metrics (http:\/\/127\.0\.0\.1:\d+)\/metrics$/gm,
      ),
    ];
    expect(lines.map((l) => l[1]).sort(), output).toEqual([...serviceNames].sort());
    for (const [, service, , , health, metrics] of lines) {
      expect(metrics).toBe(health);
      expect((await fetch(`${health}/healthz`)).status, service).toBe(200);
      const scraped = await fetch(`${metrics}/metrics`);
      expect(scraped.status, service).toBe(200);
      expect(await scraped.text()).toContain('process_resident_memory_bytes');
    }
    expect(output).toContain(
      `gateway #0: https://localhost:${port}  (Client API https://localhost:${port}/edge/client/v1, Management API https://localhost:${port}/edge/management/v1)`,
    );

    // Every process got the documented variables, and the cluster's own values for what it sets.
    for (const [, service, , pid] of lines) {
      const seen = environmentOf(Number(pid));
      expect(seen, service).toMatchObject({
        ZITI_AUTH_RATE_LIMIT: '1',
        ZITI_AUTH_RATE_BURST: '3',
        ZITI_TOTP_ISSUER: 'cluster-config-test',
        DATABASE_POOL_SIZE: '4',
        LOG_LEVEL: 'warn',
        ZITI_BUS_NAMESPACE: namespace,
      });
      expect(seen.HEALTH_PORT, service).not.toBe('1');
      expect(Object.keys(seen).filter((k) => k.startsWith('ZITI_CLUSTER_'))).toEqual([]);
    }

    // The gateway applies the rate limit it was given: a few attempts from this address, then 429.
    const url = `https://localhost:${port}`;
    const insecure = createHttpClient(url, undefined);
    const ca = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text).join('');
    const http = createHttpClient(url, ca);
    const statuses: number[] = [];
    let refused;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await http({
        method: 'POST',
        path: '/edge/client/v1/authenticate?method=password',
        body: { username: uniqueName('nobody'), password: 'wrong-password' },
      });
      statuses.push(res.status);
      if (res.status === 429 && String(res.json?.error?.cause?.message).includes('from this address')) refused = res;
    }
    expect(refused, `statuses ${statuses}`).toBeDefined();
    expect(statuses[0]).toBe(401);
    expect(statuses.indexOf(429)).toBeLessThanOrEqual(4);

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    running = undefined;
  }, 300_000);
});
