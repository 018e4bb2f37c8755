import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { clusterOwnedVariables, parseReplicas, passedConfiguration } from '../../deploy/local-cluster.ts';

/** deploy/'s static checks run with the suite; `npm run cluster`'s replica choice. */
const root = fileURLToPath(new URL('../..', import.meta.url));

describe('deploy/check.ts', () => {
  it('passes on the chart, compose file and entrypoint as they are', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'deploy/check.ts'], {
      cwd: root,
    });
    expect(stdout).toMatch(/^deploy check: ok/);
  });
});

describe('npm run cluster --replicas', () => {
  it('reads replicas per service', () => {
    expect(parseReplicas('gateway=2, auth=3')).toEqual({ gateway: 2, auth: 3 });
    expect(parseReplicas('')).toEqual({});
  });

  it('refuses unknown services and counts that are not 1 to 16', () => {
    expect(() => parseReplicas('gatway=2')).toThrow(/unknown service gatway/);
    for (const bad of ['auth=0', 'auth=x', 'auth', 'auth=17', 'auth=1.5'])
      expect(() => parseReplicas(bad), bad).toThrow(/not a count/);
  });
});

describe('npm run cluster passes the documented configuration on', () => {
  it('passes ZITI_* and the documented others, not what the cluster sets, nor its own settings', () => {
    expect(
      passedConfiguration({
        ZITI_AUTH_RATE_LIMIT: '5',
        ZITI_BIND: '0.0.0.0',
        LOG_FORMAT: 'json',
        HEALTH_BIND: '127.0.0.1',
        REDIS_KEY_PREFIX: 'x:',
        DATABASE_POOL_SIZE: '4',
        ZITI_CLUSTER_REPLICAS: 'gateway=2',
        ZITI_PORT: '1280',
        ZITI_SECRET_KEY: 'k'.repeat(40),
        ZITI_BUS_NAMESPACE: 'other',
        NATS_URL: 'nats://elsewhere:4222',
        AUTH_DATABASE_URL: 'postgres://elsewhere/auth',
        HEALTH_PORT: '8080',
        ZITI_TOTP_ISSUER: '',
        PATH: '/usr/bin',
        NODE_OPTIONS: '--import tsx',
      }),
    ).toEqual({
      ZITI_AUTH_RATE_LIMIT: '5',
      ZITI_BIND: '0.0.0.0',
      LOG_FORMAT: 'json',
      HEALTH_BIND: '127.0.0.1',
      REDIS_KEY_PREFIX: 'x:',
      DATABASE_POOL_SIZE: '4',
    });
  });

  it("covers every variable of the README's configuration table: passed on, set by the cluster, or the cluster's own", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = /^## Configuration\n([\s\S]*?)\n## /m.exec(readme)?.[1] ?? '';
    const variables = section
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .flatMap((l) => [...(l.split('|')[1] ?? '').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
    expect(variables.length).toBeGreaterThan(20);
    const owned = new Set<string>(clusterOwnedVariables);
    const uncovered = variables.filter(
      (v) =>
        !owned.has(v) &&
        !v.startsWith('ZITI_CLUSTER_') &&
        v !== 'POSTGRES_URL' &&
        passedConfiguration({ [v]: 'x' })[v] !== 'x',
    );
    expect(uncovered).toEqual([]);
  });
});
