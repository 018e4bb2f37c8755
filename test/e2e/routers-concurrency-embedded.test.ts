import { afterAll, beforeAll, describe, it } from 'vitest';
import { type Embedded, startEmbedded } from '../support/embedded.ts';
import { runRouterConcurrency } from '../support/router-concurrency.ts';

/**
 * The embedded mode (`npm start`: one PGlite connection per service, the in-process bus) under
 * concurrent router creation, enrollment, re-enrollment and deletion. inventory and pki-enrollment
 * call each other for these; were either to call while holding its transaction (its only
 * connection), the two would wait on each other until the bus timed out (ADR 0007).
 */
let app: Embedded;

beforeAll(async () => {
  app = await startEmbedded();
});
afterAll(async () => {
  await app?.stop();
});

describe('routers under concurrency, embedded', () => {
  it('creates, enrolls, re-enrolls and deletes 12 routers at a time without deadlock, and ends in the right state', async () => {
    await runRouterConcurrency(app, { routers: 12, batchDeadlineMs: 15_000 });
  }, 180_000);
});
