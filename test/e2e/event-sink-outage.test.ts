import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { uniqueName, waitFor } from '../support/infra.ts';
import { receiveWebhook } from '../support/webhook.ts';

/**
 * The webhook sink through a one-minute outage of its receiver, on the real cluster (issue 24: "a
 * webhook that fails for a minute receives everything afterwards in order"). The audit service runs
 * as its own process with the documented settings (ZITI_EVENTS_WEBHOOK_URL, _SECRET) and its default
 * back-off (0.5 s doubling to 30 s); the receiver answers 503 for 60 s while changes keep being made
 * through the management API, then recovers. Every change made before, during and after the outage
 * must arrive once, in the order the feed gave them, each signed as docs/extensions.md says.
 */

const secret = `whsec-${uniqueName('outage')}`;
const outageMs = 60_000;

interface Delivery {
  id: string;
  feedId: string;
  eventType: string;
  entityType: string;
  name?: string;
}

/** A receiver that checks each POST's signature as documented, and can be down (503). */
class Receiver {
  private server?: Server;
  port = 0;
  down = false;
  failedAttempts = 0;
  badSignatures = 0;
  readonly accepted: Delivery[] = [];

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { id, body, valid } = await receiveWebhook(req, secret);
    if (!valid) {
      this.badSignatures++;
      res.writeHead(401).end();
      return;
    }
    if (this.down) {
      this.failedAttempts++;
      res.writeHead(503).end('down for maintenance');
      return;
    }
    const event = JSON.parse(body) as {
      feedId: string;
      eventType: string;
      entityType: string;
      finalState?: { name?: string } | null;
      initialState?: { name?: string } | null;
    };
    this.accepted.push({
      id,
      feedId: event.feedId,
      eventType: event.eventType,
      entityType: event.entityType,
      name: event.finalState?.name ?? event.initialState?.name,
    });
    res.writeHead(204).end();
  }
}

const receiver = new Receiver();
let e: E2e;

beforeAll(async () => {
  await receiver.start();
  e = await startE2e({
    env: {
      ZITI_EVENTS_WEBHOOK_URL: `http://127.0.0.1:${receiver.port}/hooks/ziti`,
      ZITI_EVENTS_WEBHOOK_SECRET: secret,
    },
  });
}, 120_000);
afterAll(async () => {
  await e?.stop();
  await receiver.stop();
});

const position = (feedId: string) => Number(/:(\d+)$/.exec(feedId)?.[1]);

describe('the webhook sink through a one-minute outage of its receiver', () => {
  it('receives every change made before, during and after the minute, once and in order', async () => {
    const tag = uniqueName('sink');
    const made: string[] = [];
    const createService = async (i: number) => {
      const name = `${tag}-${String(i).padStart(3, '0')}`;
      const res = await e.call('management', {
        method: 'POST',
        path: '/services',
        token: e.adminToken,
        body: { name, encryptionRequired: true },
      });
      expect(res.status, res.text).toBe(201);
      made.push(name);
    };
    const ours = () => receiver.accepted.filter((d) => d.entityType === 'services' && d.name?.startsWith(tag));

    // Before: delivered as they happen.
    for (let i = 0; i < 3; i++) await createService(i);
    await waitFor(() => ours().length === 3 || undefined, 'the first changes at the webhook', 30_000);

    // The outage: a minute of 503s while changes keep coming, one every two seconds.
    receiver.down = true;
    const outageEnds = Date.now() + outageMs;
    let i = 3;
    while (Date.now() < outageEnds) {
      await createService(i++);
      await new Promise((r) => setTimeout(r, Math.min(2_000, Math.max(0, outageEnds - Date.now()))));
    }
    const duringOutage = i - 3;
    expect(duringOutage).toBeGreaterThanOrEqual(20);
    // The sink kept trying through the minute (backing off, not giving up), and nothing got through.
    expect(receiver.failedAttempts).toBeGreaterThanOrEqual(5);
    expect(ours()).toHaveLength(3);
    receiver.down = false;

    // After: a few more, then everything arrives (the longest back-off is 30 s).
    for (let j = 0; j < 3; j++) await createService(i++);
    await waitFor(() => ours().length >= made.length || undefined, 'every change after the outage', 90_000);

    const delivered = ours();
    expect(delivered.map((d) => d.name)).toEqual(made);
    expect(delivered.every((d) => d.eventType === 'created')).toBe(true);
    // The feed's order, each event once, over the whole feed (other entities' events included).
    const positions = receiver.accepted.map((d) => position(d.feedId));
    expect(positions.every((p) => Number.isInteger(p))).toBe(true);
    expect([...positions].sort((a, b) => a - b)).toEqual(positions);
    expect(new Set(receiver.accepted.map((d) => d.id)).size).toBe(receiver.accepted.length);
    expect(receiver.accepted.every((d) => d.id === d.feedId)).toBe(true);
    expect(receiver.badSignatures).toBe(0);
    // The secret never reaches a log line (checked over every process's log when the cluster stops).
    e.secrets.add(secret);
  }, 240_000);
});
