import { type ChildProcess, spawn } from 'node:child_process';
import { freePort } from '../../deploy/ports.ts';
import { createHttpClient } from './http.ts';
import { uniqueName, waitFor } from './infra.ts';
import { certificatesFromPkcs7Base64 } from './pkcs7.ts';

const root = new URL('../../', import.meta.url).pathname;

/**
 * `npm start` as its own process (its sources through tsx) on `dataDir`, with HEALTH_PORT for
 * `/metrics`, started and logged in as the admin; `stop()` ends it with SIGTERM and answers its
 * exit code.
 */
export async function startStandaloneProcess(dataDir: string): Promise<{
  child: ChildProcess;
  output: () => string;
  port: number;
  healthPort: number;
  http: ReturnType<typeof createHttpClient>;
  /** The admin's `zt-session` header. */
  admin: Record<string, string>;
  stop: () => Promise<number | null>;
}> {
  const [port, healthPort] = [await freePort(), await freePort()];
  const password = uniqueName('pw');
  const child = spawn(process.execPath, ['--import', 'tsx', 'apps/standalone/src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      ZITI_DATA_DIR: dataDir,
      ZITI_PORT: String(port),
      ZITI_CTRL_PORT: '0',
      ZITI_ADVERTISED_ADDRESS: `localhost:${port}`,
      ZITI_ADMIN_PASSWORD: password,
      HEALTH_PORT: String(healthPort),
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  try {
    await waitFor(() => output.includes('is up at'), 'the controller to start', 90_000);
    const insecure = createHttpClient(`https://127.0.0.1:${port}`, undefined);
    const ca = certificatesFromPkcs7Base64((await insecure({ path: '/.well-known/est/cacerts' })).text);
    const http = createHttpClient(`https://127.0.0.1:${port}`, ca.join(''));
    const login = await http({
      method: 'POST',
      path: '/edge/management/v1/authenticate?method=password',
      body: { username: 'admin', password },
    });
    if (login.status !== 200) throw new Error(`admin login failed: ${login.status} ${login.text}`);
    return {
      child,
      output: () => output,
      port,
      healthPort,
      http,
      admin: { 'zt-session': login.json.data.token as string },
      stop: async () => {
        if (child.exitCode === null) child.kill('SIGTERM');
        return exited;
      },
    };
  } catch (err) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw err;
  }
}
