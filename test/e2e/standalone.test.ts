import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createHttpClient } from '../support/http.ts';
import { waitFor } from '../support/infra.ts';
import { certificatesFromPkcs7Base64 } from '../support/pkcs7.ts';
import { loadSpecValidator } from '../support/spec-validator.ts';
import { freePort } from '../../deploy/ports.ts';

const root = new URL('../../', import.meta.url).pathname;

function startController(dataDir: string, port: number) {
  // What `npm start` runs: the launcher, which runs main.ts from its ahead-of-time bundle (made or
  // remade here if the sources changed since).
  const child = spawn(process.execPath, ['apps/standalone/start.mjs'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      ZITI_DATA_DIR: dataDir,
      ZITI_PORT: String(port),
      ZITI_ADVERTISED_ADDRESS: `localhost:${port}`,
      ZITI_CTRL_PORT: '0',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  return { child, exited, output: () => output };
}

/** Every path under `dir` whose mode is not 0700 (directories) or 0600 (files), with its mode. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    const mode = statSync(d).mode & 0o777;
    if (mode !== 0o700) found.push(`${d} ${mode.toString(8)}`);
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && (statSync(path).mode & 0o777) !== 0o600)
        found.push(`${path} ${(statSync(path).mode & 0o777).toString(8)}`);
    }
  };
  walk(dir);
  return found;
}

describe('npm start (embedded mode)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'ziti-standalone-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('serves /version on both roots over HTTPS, prints how to log in, and keeps its data across a restart', async () => {
    const port = await freePort();
    const spec = loadSpecValidator();
    const first = startController(dataDir, port);
    try {
      await waitFor(() => first.output().includes('is up at'), 'the controller to start', 90_000);
      expect(first.output()).toContain(`https://localhost:${port}/edge/management/v1`);
      const password = /shown only now: (\S+)/.exec(first.output())?.[1];
      expect(password).toBeTruthy();
      expect(readFileSync(join(dataDir, 'admin-password'), 'utf8').trim()).toBe(password);
      expect(statSync(join(dataDir, 'admin-password')).mode & 0o777).toBe(0o600);

      const insecure = createHttpClient(`https://127.0.0.1:${port}`, undefined);
      const ca = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text);
      const http = createHttpClient(`https://127.0.0.1:${port}`, ca.join(''));
      for (const [api, path] of [
        ['client', '/edge/client/v1/version'],
        ['management', '/edge/management/v1/version'],
      ] as const) {
        const res = await http({ path });
        expect(res.status).toBe(200);
        spec.validate(api, 'GET', path, res.status, res.json);
      }
      // The embedded databases and kept secrets are the user's alone (issue 12 item 2).
      expect(openToOthers(dataDir)).toEqual([]);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(openToOthers(dataDir)).toEqual([]);
      // What an earlier version left open is closed at the next start.
      chmodSync(join(dataDir, 'auth', 'PG_VERSION'), 0o666);
      chmodSync(join(dataDir, 'auth'), 0o777);

      // Second start on the same data: same CA, no new password printed.
      const second = startController(dataDir, port);
      try {
        await waitFor(() => second.output().includes('is up at'), 'the controller to restart', 90_000);
        expect(second.output()).not.toContain('shown only now');
        const again = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text);
        expect(again).toEqual(ca);
        expect(openToOthers(dataDir)).toEqual([]);
      } finally {
        second.child.kill('SIGTERM');
        await second.exited;
      }
    } finally {
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
  }, 300_000);
});
