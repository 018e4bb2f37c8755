import { ConfigError } from '@ziti/platform';
import type { ServiceName } from '../cli.ts';
import { type Io, configReaders, plural } from '../support.ts';

/**
 * Runs each service's configuration reader on the environment, as the service's process does
 * before it connects to anything, and lists every problem of every service at once. Connects to
 * nothing. 0 when every service's configuration is usable, 1 otherwise.
 */
export async function checkConfig(services: readonly ServiceName[], io: Io): Promise<number> {
  let failed = 0;
  for (const service of services) {
    try {
      configReaders[service](io.env);
      io.out(`${service}: OK`);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      failed++;
      io.out(`${service}: ${plural(err.problems.length, 'problem')}`);
      for (const problem of err.problems) io.out(`  ${problem}`);
    }
  }
  if (io.env.ZITI_SECRET_KEY_PREVIOUS && services.some((s) => s === 'auth' || s === 'pki-enrollment'))
    io.out(
      'note: ZITI_SECRET_KEY_PREVIOUS is set; once `rotate-secret-key` reports nothing left to re-seal, remove it',
    );
  if (failed > 0) io.err(`configuration: ${plural(failed, 'service')} of ${services.length} cannot start`);
  return failed > 0 ? 1 : 0;
}
