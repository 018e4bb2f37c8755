import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import { type Consumer, type EventEnvelope, NatsBus, createLogger } from '../src/index.ts';

/**
 * Regression (found in review): the NATS consumer extends the ack deadline (`working()`) every second for every message
 * it holds — queued or being handled — as long as the process lives, whether or not its processor
 * makes progress. A replica whose handler hangs (a query stuck on a lock, a dead TCP connection
 * without keepalive: pg has no statement timeout by default) keeps its events forever: the other
 * replicas never get them, although ADR 0008 promises redelivery within the ack wait (1.5 s).
 */
const logger = createLogger('test', 'silent');
const namespace = uniqueName('lease');
const buses: NatsBus[] = [];
let release: () => void = () => undefined;
const consumers: Consumer[] = [];

afterAll(async () => {
  release();
  for (const c of consumers) await c.stop();
  for (const b of buses) await b.close();
});

const event = (n: number): EventEnvelope => ({
  id: `auth:${n}`,
  type: 'identity.deleted',
  version: 1,
  source: 'auth',
  sequence: n,
  occurredAt: new Date().toISOString(),
  data: { id: `i${n}` },
});

describe('regression: a live replica with a hung handler', () => {
  it('gives its events to another replica after a bounded time', async () => {
    // A hung batch is held for at most maxHoldMs (35 s by default, beyond the consumers' 30 s
    // statement timeout); shortened here to see it go.
    const a = await NatsBus.connect({ url: infra.natsUrl, name: 'a', namespace, logger, maxHoldMs: 2_000 });
    const b = await NatsBus.connect({ url: infra.natsUrl, name: 'b', namespace, logger });
    buses.push(a, b);
    const durable = 'pki-enrollment-from-auth';
    const subject = 'ziti.evt.auth.>';
    const gotA: number[] = [];
    const gotB: number[] = [];
    const hung = new Promise<void>((r) => {
      release = r;
    });
    consumers.push(
      await a.consume({
        durable,
        subject,
        handler: async (batch) => {
          gotA.push(...batch.map((d) => d.event.sequence));
          await hung; // replica A's handler never returns
        },
      }),
    );
    await a.publish('ziti.evt.auth.identity.deleted', event(1));
    await waitFor(() => gotA.includes(1), 'replica A to get event 1');
    consumers.push(
      await b.consume({
        durable,
        subject,
        handler: async (batch) => {
          gotB.push(...batch.map((d) => d.event.sequence));
        },
      }),
    );
    for (let n = 2; n <= 21; n++) await a.publish('ziti.evt.auth.identity.deleted', event(n));
    // Three ack waits (1.5 s each) are ample for redelivery to B.
    const all = Array.from({ length: 21 }, (_, i) => i + 1);
    const deadline = Date.now() + 12_000;
    while (Date.now() < deadline && !all.every((n) => gotB.includes(n))) await new Promise((r) => setTimeout(r, 200));
    const neverDelivered = all.filter((n) => !gotB.includes(n));
    expect(neverDelivered).toEqual([]);
  }, 30_000);
});
