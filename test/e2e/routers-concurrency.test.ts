import { afterAll, beforeAll, describe, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { runRouterConcurrency } from '../support/router-concurrency.ts';

/**
 * The cluster (separate processes, real Postgres and NATS) under concurrent router creation,
 * enrollment, re-enrollment and deletion: inventory and pki-enrollment call each other for
 * these, and a call made while holding row locks the other side needs (re-enrolling a router
 * while it enrolls) would wait until the bus timed out.
 */
let e: E2e;

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

describe('routers under concurrency, cluster', () => {
  it('creates, enrolls, re-enrolls and deletes 16 routers at a time without deadlock, and ends in the right state', async () => {
    await runRouterConcurrency(e, { routers: 16, batchDeadlineMs: 15_000 });
  }, 240_000);
});
