import { type ServerIdentity, pkiEnrollmentCallContracts } from '@ziti/contracts';
import type { Bus } from './bus/bus.ts';
import { callService } from './call.ts';
import type { Logger } from './logger.ts';

/**
 * Asks pki-enrollment for the controller's TLS identity (server certificate chain, key, CA bundle),
 * waiting for it to come up: the API port (gateway) and the control port (fabric) serve it.
 */
export async function fetchServerIdentity(bus: Bus, logger: Logger, timeoutMs = 120_000): Promise<ServerIdentity> {
  const deadline = Date.now() + timeoutMs;
  let delay = 100;
  for (;;) {
    try {
      return await callService(
        bus,
        'pki-enrollment',
        pkiEnrollmentCallContracts.serverIdentity,
        {},
        { timeoutMs: 5_000 },
      );
    } catch (err) {
      if (Date.now() > deadline) throw err;
      logger.info({ err: (err as Error).message }, 'waiting for pki-enrollment to provide the server certificate');
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2_000);
    }
  }
}
