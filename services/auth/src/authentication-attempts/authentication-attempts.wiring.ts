import {
  type AttemptQueueOptions,
  BatchedAuthenticationAttempts,
  outboxAttemptWriter,
} from './authentication-attempts.store.ts';
import type { AuthCore } from '../shared/core.wiring.ts';

/**
 * Every login and MFA check reported as `authentication.attempted`, queued in memory and written to
 * the outbox in batches: no write on the login's path (docs/adr/0021).
 */
export const authenticationAttemptsWiring = (core: AuthCore, options?: AttemptQueueOptions) =>
  new BatchedAuthenticationAttempts(outboxAttemptWriter(core.database, core.relay), core.logger, options);
