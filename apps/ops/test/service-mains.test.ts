import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseServices, serviceNames } from '../src/cli.ts';

const root = join(import.meta.dirname, '..', '..', '..');

/** Runs a service's `main.ts` with `env` only; its exit code and output. */
function runMain(
  service: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'services', service, 'src', 'main.ts')], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${service} did not exit`));
    }, 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

describe('every service checks its configuration first', () => {
  it.each(serviceNames)(
    '%s: a bad environment ends in one plain message and exit 1, before anything connects',
    async (service) => {
      // A NATS and a Redis nobody listens on: a process that tried to connect first would hang or log.
      const { code, out, err } = await runMain(service, {
        LOG_LEVEL: 'verbose',
        NATS_URL: 'nats://127.0.0.1:1',
        REDIS_URL: 'redis://127.0.0.1:1',
        ZITI_SECRET_KEY: 'short',
      });
      expect(code).toBe(1);
      expect(out).toBe('');
      expect(err.startsWith(`${service}: invalid configuration:\n`)).toBe(true);
      expect(err).toContain('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent');
      if ((databaseServices as readonly string[]).includes(service)) expect(err).toMatch(/_DATABASE_URL is required/);
      else expect(err).not.toMatch(/_DATABASE_URL/);
      expect(err).not.toMatch(/^\s+at /m);
    },
    40_000,
  );
});
