import { type Owner, authenticationEventTypes, eventTypes, publishedEvent } from '@ziti/contracts';
import {
  type EventDelivery,
  type EventEnvelope,
  type EventSubscription,
  SourceConsumer,
  createLogger,
  migrate,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchBus } from '../../packages/platform/test/support/batch-bus.ts';
import { createTestDatabase } from '../support/infra.ts';
import { identityEventSubscription } from '../../services/inventory/src/identity-service-configs/identity-events.transport.ts';
import { authEventSubscription } from '../../services/pki-enrollment/src/shared/auth-events.transport.ts';
import { authReadModelSubscription } from '../../services/policy/src/read-models/read-model-events.transport.ts';

/**
 * auth publishes `authentication.attempted`, one event per batch of logins (docs/adr/0021). Every
 * other service's consumer of auth's events (inventory, pki-enrollment, policy: one durable each on
 * `ziti.evt.auth.>`) must take it as a known event it has no handler for: acked, its position
 * applied (the cursor moves, so later events are not held behind a gap), nothing parked, nothing
 * of theirs run. Their real subscriptions, with domain parts that record any call; real Postgres.
 */
const logger = createLogger('test', (process.env.TEST_LOG as never) ?? 'silent');
const attempted = authenticationEventTypes.authenticationAttempted;

/** A stand-in for a service's domain part: every call is recorded, and answers nothing. */
function recorder(calls: string[], name: string): never {
  return new Proxy(
    {},
    {
      get:
        (_target, method) =>
        (..._args: unknown[]) => {
          calls.push(`${name}.${String(method)}`);
          return Promise.resolve(0);
        },
    },
  ) as never;
}

const subscriptions: Record<Exclude<Owner, 'auth' | 'gateway' | 'audit'>, (calls: string[]) => EventSubscription> = {
  inventory: (calls) =>
    identityEventSubscription(recorder(calls, 'overrides'), () => recorder(calls, 'stores'), logger),
  'pki-enrollment': (calls) => authEventSubscription(recorder(calls, 'effects'), () => recorder(calls, 'stores')),
  policy: (calls) => authReadModelSubscription(() => recorder(calls, 'identities'), recorder(calls, 'derive'), logger),
};

const attempt = (position: number): EventDelivery => ({
  attempt: 1,
  event: {
    id: `auth:${position}`,
    type: attempted.type,
    version: attempted.version,
    source: 'auth',
    sequence: position,
    occurredAt: new Date().toISOString(),
    // A batch of attempts, each with its login's meta; the event itself has none (docs/adr/0021).
    data: {
      attempts: [1, 2, 3].map((i) => ({
        method: 'password',
        outcome: 'failed',
        reason: 'INVALID_AUTH',
        at: new Date().toISOString(),
        meta: { requestId: `r-${position}-${i}`, operation: 'client.authenticate', remoteAddress: '127.0.0.1' },
      })),
    },
  } as EventEnvelope,
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

describe('the consumers of auth’s events and authentication.attempted', () => {
  it('auth publishes it: a known event type of auth for every consumer', () => {
    expect(publishedEvent('auth', attempted.type)).toMatchObject({ type: attempted.type, version: attempted.version });
  });

  it.each(Object.keys(subscriptions) as (keyof typeof subscriptions)[])(
    '%s acks it, moves its cursor past it, parks nothing and runs none of its handlers',
    async (owner) => {
      const created = await createTestDatabase('attc');
      cleanups.push(created.drop);
      const database = await openDatabase({ url: created.url, poolSize: 4 });
      cleanups.push(() => database.close());
      await migrate(database, []);
      const calls: string[] = [];
      const subscription = subscriptions[owner](calls);
      // None of them handles it (a handler would run its domain on every login).
      expect(subscription.handlers.map((h) => h.type)).not.toContain(attempted.type);
      expect(subscription.handlers.map((h) => h.type)).toContain(eventTypes.identityDeleted.type);
      const bus = new BatchBus();
      const consumer = new SourceConsumer({
        owner,
        source: 'auth',
        handlers: subscription.handlers,
        readModels: subscription.readModels ?? [],
        database,
        bus,
        logger,
        tickMs: 3_600_000,
      });
      await consumer.start();
      cleanups.push(() => consumer.stop());
      await consumer.tick(); // the first start's resync, at the owner's position 0
      const fromResync = calls.length;

      // A login storm's worth of batches, delivered as the durable does; a handler throwing
      // RetryEvents (or failing) would reject here.
      await bus.handler!([1, 2, 3, 4, 5].map(attempt));
      await bus.handler!([7, 6].map(attempt));
      await bus.handler!([attempt(8)]);

      const [cursor] = await queryRows<{ watermark: string; applied: unknown }>(
        database.db,
        'select watermark::text, applied from event_cursors where source = $1',
        ['auth'],
      );
      expect(Number(cursor!.watermark)).toBe(8);
      const parked = await queryRows<{ count: number }>(
        database.db,
        'select count(*)::int as count from parked_events',
      );
      expect(parked[0]!.count).toBe(0);
      expect(calls.slice(fromResync)).toEqual([]);
    },
  );
});
