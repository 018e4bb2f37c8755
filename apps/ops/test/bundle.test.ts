import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/infra.ts';

/**
 * The production image runs ziti-edge-ops from its esbuild bundle, with no TypeScript compiler:
 * the bundle is made as `apps/ops/bundle.mjs` makes it, and runs with tsx unloadable.
 */
const root = join(import.meta.dirname, '..', '..', '..');
const out = join(root, 'node_modules', '.cache', `ziti-ops-bundle-test-${process.pid}`);
const blockTsx = `data:text/javascript,${encodeURIComponent(
  `import { register } from 'node:module';
   register('data:text/javascript,' + encodeURIComponent('export async function resolve(s, c, n) { if (s === "tsx" || s.startsWith("tsx/")) throw new Error("tsx is not installed"); return n(s, c); }'));`,
)}`;

const drops: (() => Promise<void>)[] = [];
afterAll(async () => {
  rmSync(out, { recursive: true, force: true });
  for (const drop of drops) await drop();
});

describe('the ziti-edge-ops bundle', () => {
  it('is made by esbuild and runs without tsx', async () => {
    const built = spawnSync(process.execPath, [join(root, 'apps', 'ops', 'bundle.mjs'), '--out', out], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(built.status, built.stderr).toBe(0);
    expect(existsSync(join(out, 'main.js'))).toBe(true);
    const run = (args: string[], env: Record<string, string> = {}) =>
      spawnSync(process.execPath, ['--import', blockTsx, join(out, 'main.js'), ...args], {
        cwd: root,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', ...env },
      });
    const help = run(['--help']);
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain('usage: ziti-edge-ops <command> [options]');
    const check = run(['check-config', '--service', 'policy'], { LOG_LEVEL: 'verbose' });
    expect(check.status).toBe(1);
    expect(check.stdout).toContain('LOG_LEVEL must be one of');
    // The services' migrations are found beside their sources, as the services find them.
    const db = await createTestDatabase('ops_bundle');
    drops.push(db.drop);
    const migrate = run(['migrate', '--service', 'audit'], { AUDIT_DATABASE_URL: db.url });
    expect(migrate.status, migrate.stderr).toBe(0);
    expect(migrate.stdout).toMatch(/^audit: applied platform:0001_outbox, .*0001_audit/m);
  }, 60_000);
});
