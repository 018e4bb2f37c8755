import { appendFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Bus,
  type Database,
  type EventEnvelope,
  InProcessBus,
  NatsBus,
  createLogger,
  migrate,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { metricsRegistry } from '@ziti/platform/metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, uniqueName, waitFor } from '../../../../test/support/infra.ts';
import { receiveWebhook } from '../../../../test/support/webhook.ts';
import { createAuditService, migrations } from '../app.ts';
import { readAuditConfig } from '../config.ts';
import { PgSinkCheckpoint } from './checkpoints.store.ts';
import { type SinkConfig, sinkDurables } from './sinks.domain.ts';
import type { SinkCheckpoint, SinkLease } from './sinks.ports.ts';
import { type EventSinks, startEventSinks } from './sinks.transport.ts';

/**
 * The sinks on real buses: NATS (JetStream, a namespace of their own per test) and the in-process
 * bus of `npm start`, with a webhook receiver on 127.0.0.1 that checks every signature the way the
 * documentation tells a receiver to, and files in a directory of their own.
 */

const secret = 'test-webhook-secret-0123456789';
const subject = 'ziti.evt.audit.auditRecord.created';

function auditEvent(n: number, category: 'change' | 'authentication' = 'change'): EventEnvelope {
  const record = {
    id: `rec-${n}`,
    at: new Date().toISOString(),
    category,
    operation: category === 'change' ? 'management.createService' : 'client.authenticate',
    requestId: `req-${n}`,
    action: category === 'change' ? 'created' : 'succeeded',
    eventId: `inventory:${n}`,
    ...(category === 'authentication' ? { authMethod: 'password' } : {}),
  };
  const change = {
    namespace: 'entityChange',
    event_src_id: 'ctrl',
    timestamp: new Date().toISOString(),
    eventId: `inventory:${n}`,
    eventType: 'created',
    metadata: { version: 'v1' },
    entityType: 'services',
    isParentEvent: false,
    initialState: null,
    finalState: { id: `svc-${n}`, name: `service ${n}` },
  };
  return {
    id: `audit:${n}`,
    type: 'auditRecord.created',
    version: 1,
    source: 'audit',
    sequence: n,
    occurredAt: new Date().toISOString(),
    data: category === 'change' ? { record, change } : { record },
  };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const ids = (ns: number[]) => ns.map((n) => `audit:${n}`);

/** Publishes in order like audit's outbox relay: an event is published again until the bus took it. */
async function relay(bus: Bus, events: EventEnvelope[]): Promise<void> {
  for (const event of events)
    await waitFor(
      async () => {
        await bus.publish(subject, event);
        return true;
      },
      `publishing ${event.id}`,
      25_000,
      20,
    );
}

/** A webhook receiver that verifies as documented: HMAC over "<id>.<timestamp>.<body>", timestamp within 5 minutes. */
class Receiver {
  private server?: Server;
  port = 0;
  mode: 'ok' | 'fail' = 'ok';
  attempts = 0;
  refusedSignatures = 0;
  /** Event ids accepted (2xx), in arrival order, with their bodies. */
  readonly accepted: { id: string; body: string }[] = [];
  /** Ids whose first attempt is accepted but answered too late (the sender times out). */
  readonly answerLate = new Set<string>();
  /** How long every accepted event waits for its answer (a slow receiver). */
  answerDelayMs = 0;

  async start(port = 0): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as { port: number }).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/ziti?token=receiver-token`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { id, body, valid } = await receiveWebhook(req, secret);
    this.attempts++;
    if (!valid) {
      this.refusedSignatures++;
      res.writeHead(401).end();
      return;
    }
    if (this.mode === 'fail') {
      res.writeHead(500).end('down for maintenance');
      return;
    }
    this.accepted.push({ id, body });
    if (this.answerLate.delete(id)) {
      setTimeout(() => res.writeHead(204).end(), 800);
      return;
    }
    if (this.answerDelayMs > 0) {
      setTimeout(() => res.writeHead(204).end(), this.answerDelayMs);
      return;
    }
    res.writeHead(204).end();
  }
}

function captureLogs() {
  const lines: string[] = [];
  const logger = createLogger('audit', 'info', { write: (line: string) => void lines.push(line) });
  return { lines, logger };
}

async function metric(name: string, sink: string): Promise<number | undefined> {
  const text = await metricsRegistry.getSingleMetricAsString(name);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{sink="${sink}"`));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

const makeBus: Record<string, () => Promise<Bus>> = {
  nats: () =>
    NatsBus.connect({
      url: infra.natsUrl,
      name: 'audit-sinks-test',
      namespace: uniqueName('sinks'),
      logger: createLogger('bus', 'silent'),
    }),
  'in-process': async () => new InProcessBus({ logger: createLogger('bus', 'silent') }),
};

describe.each(Object.keys(makeBus))('event sinks on the %s bus', (kind) => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  async function setup(
    options: {
      file?: boolean;
      webhook?: boolean;
      timeoutMs?: number;
      auth?: boolean;
      handBack?: boolean;
      backoff?: SinkConfig['backoff'];
    } = {},
  ) {
    const bus = await makeBus[kind]!();
    cleanups.push(() => bus.close());
    const dir = await mkdtemp(join(tmpdir(), 'ziti-sinks-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const receiver = new Receiver();
    await receiver.start();
    cleanups.push(() => receiver.stop());
    const { lines, logger } = captureLogs();
    const config: SinkConfig = {
      backoff: options.backoff ?? { minMs: 20, maxMs: 200 },
      // handBack: every failure hands the batch back to the bus at once (as a back-off longer
      // than 5 s does), so order rests on the bus's redeliveries and the sink's refusals.
      tuning: { gapTimeoutMs: 10_000, ...(options.handBack ? { maxWaitInBatchMs: 0 } : {}) },
      ...(options.file
        ? {
            file: {
              path: join(dir, 'logs', 'events.jsonl'),
              checkpointPath: join(dir, 'logs', '.events.jsonl.checkpoint'),
              includeAuthentication: options.auth ?? false,
            },
          }
        : {}),
      ...(options.webhook
        ? {
            webhook: {
              url: receiver.url,
              secret,
              includeAuthentication: options.auth ?? false,
              timeoutMs: options.timeoutMs ?? 2_000,
              checkpointPath: join(dir, 'webhook.checkpoint'),
            },
          }
        : {}),
    };
    let sinks: EventSinks | undefined;
    const start = async () => {
      sinks = await startEventSinks({ bus, logger, config });
    };
    const stop = async () => {
      await sinks?.stop();
      sinks = undefined;
    };
    cleanups.push(stop);
    await start();
    const fileLines = async () => {
      const text = await readFile(config.file!.path, 'utf8').catch(() => '');
      return text === '' ? [] : text.split('\n').slice(0, -1);
    };
    return { bus, receiver, config, lines, start, stop, fileLines, dir };
  }

  it('delivers to the webhook in order, signed, leaving authentication records out', async () => {
    const { bus, receiver, lines } = await setup({ webhook: true });
    const events = range(1, 12).map((n) => auditEvent(n, n % 4 === 0 ? 'authentication' : 'change'));
    await relay(bus, events);
    const expected = ids(range(1, 12).filter((n) => n % 4 !== 0));
    await waitFor(() => receiver.accepted.length >= expected.length, 'every change at the webhook');
    expect(receiver.accepted.map((a) => a.id)).toEqual(expected);
    expect(receiver.refusedSignatures).toBe(0);
    const first = JSON.parse(receiver.accepted[0]!.body);
    expect(first).toMatchObject({ namespace: 'entityChange', eventType: 'created', entityType: 'services' });
    expect(first.feedId).toBe('audit:1');
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines.join('\n')).not.toContain('receiver-token');
  });

  it('a webhook that answers 500 for a while receives everything afterwards, in order, once', async () => {
    const { bus, receiver, lines } = await setup({ webhook: true });
    await relay(bus, [auditEvent(1)]);
    await waitFor(() => receiver.accepted.length === 1, 'the first event');
    receiver.mode = 'fail';
    const publishing = relay(
      bus,
      range(2, 15).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.attempts >= 6, 'several failed attempts');
    expect(await metric('ziti_event_sink_failing', 'audit-sink-webhook')).toBe(1);
    receiver.mode = 'ok';
    await publishing;
    await waitFor(() => receiver.accepted.length >= 15, 'everything after the outage');
    expect(receiver.accepted.map((a) => a.id)).toEqual(ids(range(1, 15)));
    await waitFor(async () => (await metric('ziti_event_sink_failing', 'audit-sink-webhook')) === 0, 'not failing');
    const failures = lines.filter((l) => l.includes('event sink delivery failed'));
    expect(failures.length).toBeGreaterThan(0);
    expect(failures[0]).toContain('"reason":"http_5xx"');
    expect(failures[0]).toContain('"status":500');
    expect(lines.join('\n')).not.toContain(secret);
    expect(lines.join('\n')).not.toContain('receiver-token');
  });

  it('hands failing events back to the bus and still delivers everything in order, once', async () => {
    const { bus, receiver } = await setup({ webhook: true, handBack: true });
    await relay(bus, [auditEvent(1)]);
    await waitFor(() => receiver.accepted.length === 1, 'the first event');
    receiver.mode = 'fail';
    const publishing = relay(
      bus,
      range(2, 30).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.attempts >= 4, 'several failed attempts');
    receiver.mode = 'ok';
    await publishing;
    await waitFor(() => receiver.accepted.length >= 30, 'everything after the outage', 25_000);
    expect(receiver.accepted.map((a) => a.id)).toEqual(ids(range(1, 30)));
  });

  it('events handed back one by one through a long outage all come again when it ends, not a redelivery apart', async () => {
    // Each event of the outage is handed back at its own time, after its own number of attempts
    // (the bus's own redelivery delay grows with them); the sink still needs them in order. They
    // must come back when the sink tries again, together: each waiting out its predecessor's own
    // redelivery delay in turn would take one delay per event.
    const backoff = { minMs: 500, maxMs: 5_000 };
    const { bus, receiver } = await setup({ webhook: true, handBack: true, backoff });
    await relay(bus, [auditEvent(1)]);
    await waitFor(() => receiver.accepted.length === 1, 'the first event');
    receiver.mode = 'fail';
    for (const n of range(2, 21)) {
      await relay(bus, [auditEvent(n)]);
      await new Promise((r) => setTimeout(r, 1_000));
    }
    await waitFor(() => receiver.attempts >= 6, 'several failed attempts');
    receiver.mode = 'ok';
    const recovered = Date.now();
    await waitFor(() => receiver.accepted.length >= 21, 'everything after the outage', 90_000);
    const tookMs = Date.now() - recovered;
    expect(receiver.accepted.map((a) => a.id)).toEqual(ids(range(1, 21)));
    // The longest back-off and a margin for a loaded machine; a redelivery per event is far more.
    expect(tookMs, `took ${tookMs} ms`).toBeLessThan(backoff.maxMs + 5_000);
  }, 150_000);

  it('a webhook that refuses connections for a while receives everything afterwards, in order, once', async () => {
    const { bus, receiver, lines } = await setup({ webhook: true });
    await relay(bus, [auditEvent(1), auditEvent(2)]);
    await waitFor(() => receiver.accepted.length === 2, 'the first events');
    const port = receiver.port;
    await receiver.stop();
    const publishing = relay(
      bus,
      range(3, 12).map((n) => auditEvent(n)),
    );
    await waitFor(
      () =>
        lines.filter((l) => l.includes('event sink delivery failed') && l.includes('"reason":"network"')).length >= 3,
      'connections refused',
    );
    await receiver.start(port);
    await publishing;
    await waitFor(() => receiver.accepted.length >= 12, 'everything after the outage');
    expect(receiver.accepted.map((a) => a.id)).toEqual(ids(range(1, 12)));
    expect(lines.join('\n')).toContain('ECONNREFUSED');
  });

  it('delivers at least once: an answer lost to a timeout repeats the event, and its id lets the receiver drop it', async () => {
    const { bus, receiver } = await setup({ webhook: true, timeoutMs: 300 });
    receiver.answerLate.add('audit:3');
    await relay(
      bus,
      range(1, 6).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.accepted.length >= 7, 'every event and the repeat');
    const got = receiver.accepted.map((a) => a.id);
    expect(got).toEqual(ids([1, 2, 3, 3, 4, 5, 6]));
    // What a receiver does: keep the last position it took, drop anything at or below it.
    let last = 0;
    const kept = got.filter((id) => {
      const n = Number(id.split(':')[1]);
      if (n <= last) return false;
      last = n;
      return true;
    });
    expect(kept).toEqual(ids(range(1, 6)));
  });

  it('appends to the file in order, private to its owner, and continues after a restart without loss or duplicate', async () => {
    const { bus, config, start, stop, fileLines } = await setup({ file: true, auth: true });
    await relay(
      bus,
      range(1, 5).map((n) => auditEvent(n, n === 2 ? 'authentication' : 'change')),
    );
    await waitFor(async () => (await fileLines()).length >= 5, 'five lines');
    expect((await stat(config.file!.path)).mode & 0o777).toBe(0o600);
    const lines = (await fileLines()).map((l) => JSON.parse(l));
    expect(lines.map((l) => l.feedId)).toEqual(ids(range(1, 5)));
    expect(lines[1]).toMatchObject({ namespace: 'authentication', category: 'authentication', action: 'succeeded' });
    expect(lines[0]).toMatchObject({ namespace: 'entityChange' });

    await stop();
    // On NATS the durable keeps what is published meanwhile; in-process, the outbox relay only
    // publishes to running consumers (the relay stops with the service), so publish after the start.
    if (kind === 'nats')
      await relay(
        bus,
        range(6, 8).map((n) => auditEvent(n)),
      );
    await start();
    if (kind !== 'nats')
      await relay(
        bus,
        range(6, 8).map((n) => auditEvent(n)),
      );
    await relay(
      bus,
      range(9, 10).map((n) => auditEvent(n)),
    );
    await waitFor(async () => (await fileLines()).length >= 10, 'ten lines');
    expect((await fileLines()).map((l) => JSON.parse(l).feedId)).toEqual(ids(range(1, 10)));
    expect((await stat(config.file!.path)).mode & 0o777).toBe(0o600);
  });

  it('after a crash between the write and the acknowledgement, writes no line twice and cuts off a torn line', async () => {
    const { bus, config, start, stop, fileLines } = await setup({ file: true });
    await relay(
      bus,
      range(1, 4).map((n) => auditEvent(n)),
    );
    await waitFor(async () => (await fileLines()).length >= 4, 'four lines');
    await stop();
    // The crash: lines 2..4 were synced but neither the checkpoint nor the acknowledgements were,
    // and the next write was torn halfway.
    await writeFile(config.file!.checkpointPath, JSON.stringify({ position: 1 }));
    await appendFile(config.file!.path, '{"namespace":"entityChange","feedId":"audit:5","fin');
    await start();
    // The bus hands back what was not acknowledged (NATS drops these as duplicates of message ids
    // it has: the durable acknowledged them before the "crash").
    await relay(
      bus,
      range(2, 7).map((n) => auditEvent(n)),
    );
    await waitFor(async () => (await fileLines()).length >= 7, 'seven lines');
    const text = await readFile(config.file!.path, 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(
      text
        .split('\n')
        .slice(0, -1)
        .map((l) => JSON.parse(l).feedId),
    ).toEqual(ids(range(1, 7)));
  });
});

/**
 * Several audit replicas with the webhook configured: two sink instances, each on its own NATS
 * connection and its own handle on audit's Postgres database, sharing the durable consumer and the
 * checkpoint row (checkpoints.store.ts), as app.ts wires them. One delivers, the other stands by.
 */
describe('the webhook sink on two replicas (NATS, checkpoint in Postgres)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  });

  /** A replica's checkpoint, counting the leases it got. */
  function counted(checkpoint: PgSinkCheckpoint) {
    const seen = { leases: 0 };
    const wrapped: SinkCheckpoint = {
      shared: true,
      load: () => checkpoint.load(),
      save: (position) => checkpoint.save(position),
      lease: async (waitMs, signal): Promise<SinkLease | undefined> => {
        const lease = await checkpoint.lease!(waitMs, signal);
        if (lease) seen.leases++;
        return lease;
      },
      close: () => checkpoint.close(),
    };
    return { seen, wrapped };
  }

  async function replicas(receiver: Receiver) {
    const namespace = uniqueName('sinks2');
    const made = await createTestDatabase('audit_sinks');
    cleanups.push(() => made.drop());
    const config: SinkConfig = {
      backoff: { minMs: 20, maxMs: 300 },
      tuning: { gapTimeoutMs: 20_000 },
      webhook: {
        url: receiver.url,
        secret,
        includeAuthentication: false,
        timeoutMs: 2_000,
        checkpointPath: join(await mkdtemp(join(tmpdir(), 'ziti-sinks-')), 'webhook.checkpoint'),
      },
    };
    const started = [];
    for (const replica of ['a', 'b']) {
      const bus = await NatsBus.connect({
        url: infra.natsUrl,
        name: `audit-${replica}`,
        namespace,
        logger: createLogger('bus', 'silent'),
      });
      cleanups.push(() => bus.close());
      const database: Database = await openDatabase({ url: made.url, poolSize: 4 });
      cleanups.push(() => database.close());
      if (replica === 'a') await migrate(database, migrations);
      const { seen, wrapped } = counted(new PgSinkCheckpoint(database, sinkDurables.webhook));
      const { lines, logger } = captureLogs();
      const sinks = await startEventSinks({ bus, logger, config, checkpoints: { webhook: wrapped } });
      cleanups.push(() => sinks.stop());
      started.push({ bus, database, seen, lines, sinks });
    }
    return started;
  }

  /** The positions accepted, checked: every event up to `last`, in order, each repeat right after its original. */
  function inOrderWithAdjacentRepeats(accepted: { id: string }[], last: number): void {
    const positions = accepted.map((a) => Number(a.id.split(':')[1]));
    positions.forEach((p, i) => {
      const previous = i === 0 ? 0 : positions[i - 1]!;
      expect([previous, previous + 1], `position ${p} after ${previous} (at ${i})`).toContain(p);
    });
    expect(positions.at(-1)).toBe(last);
    expect(new Set(positions).size).toBe(last);
  }

  const sharedPosition = async (database: Database) =>
    Number(
      (
        await queryRows<{ position: string | number }>(
          database.db,
          'select position from sink_checkpoints where name = $1',
          [sinkDurables.webhook],
        )
      )[0]?.position,
    );

  it('one replica delivers, the other stands by and takes over from the shared position when it stops', async () => {
    const receiver = new Receiver();
    await receiver.start();
    cleanups.push(() => receiver.stop());
    const [a, b] = await replicas(receiver);
    await relay(
      a!.bus,
      range(1, 40).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.accepted.length >= 40, 'the first events');
    // Exactly one replica took the lease; the other says it stands by.
    expect(a!.seen.leases + b!.seen.leases).toBe(1);
    const [leader, standby] = a!.seen.leases === 1 ? [a!, b!] : [b!, a!];
    expect(standby.lines.join('\n')).toContain('event sink stands by');
    // The checkpoint follows the deliveries (it is written after the receiver's answer), so it is awaited.
    await waitFor(async () => (await sharedPosition(leader.database)) === 40, "the leader's checkpoint");

    // The leader stops (a rolling update) in the middle of a slow stretch; the other goes on.
    receiver.answerDelayMs = 40;
    const publishing = relay(
      standby.bus,
      range(41, 120).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.accepted.length >= 55, 'part of the next events');
    await leader.sinks.stop();
    await publishing;
    receiver.answerDelayMs = 0;
    await waitFor(() => receiver.accepted.some((r) => r.id === 'audit:120'), 'every event from the other', 30_000);
    expect(standby.seen.leases).toBe(1);
    inOrderWithAdjacentRepeats(receiver.accepted, 120);
    await waitFor(async () => (await sharedPosition(standby.database)) === 120, 'the shared position');
    expect(receiver.refusedSignatures).toBe(0);
    for (const r of [a!, b!]) expect(r.lines.join('\n')).not.toContain(secret);
  }, 90_000);

  it('a replica whose database connection breaks stops delivering; the feed goes on in order, through an outage', async () => {
    const receiver = new Receiver();
    await receiver.start();
    cleanups.push(() => receiver.stop());
    const [a, b] = await replicas(receiver);
    await relay(
      a!.bus,
      range(1, 20).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.accepted.length >= 20, 'the first events');
    receiver.answerDelayMs = 30;
    const publishing = relay(
      b!.bus,
      range(21, 100).map((n) => auditEvent(n)),
    );
    await waitFor(() => receiver.accepted.length >= 35, 'part of the next events');
    // The lease holder's connection is cut (a failover of Postgres, a partition).
    await queryRows(
      a!.database.db,
      `select pg_terminate_backend(pid) from pg_locks
        where locktype = 'advisory' and classid = 7355610 and objid::int = hashtext($1) and granted`,
      [sinkDurables.webhook],
    );
    await waitFor(
      () => [a!, b!].some((r) => r.lines.some((l) => l.includes('event sink lost its lease'))),
      'the lease holder to notice',
    );
    receiver.mode = 'fail';
    await waitFor(() => receiver.attempts >= receiver.accepted.length + 5, 'failed attempts');
    receiver.mode = 'ok';
    receiver.answerDelayMs = 0;
    await publishing;
    await waitFor(() => receiver.accepted.some((r) => r.id === 'audit:100'), 'every event', 60_000);
    inOrderWithAdjacentRepeats(receiver.accepted, 100);
    await waitFor(async () => (await sharedPosition(a!.database)) === 100, 'the shared position');
  }, 90_000);
});

describe('the audit service wires the webhook to its database', () => {
  it("keeps the webhook's position in sink_checkpoints, starting from the file of an earlier version", async () => {
    const made = await createTestDatabase('audit_wired');
    const receiver = new Receiver();
    await receiver.start();
    const dir = await mkdtemp(join(tmpdir(), 'ziti-sinks-'));
    const bus = await NatsBus.connect({
      url: infra.natsUrl,
      name: 'audit-wired',
      namespace: uniqueName('sinks3'),
      logger: createLogger('bus', 'silent'),
    });
    const database = await openDatabase({ url: made.url, poolSize: 6 });
    const checkpointFile = join(dir, 'audit-sink-webhook.checkpoint');
    // An earlier version delivered up to 3 and kept that in its file.
    await writeFile(checkpointFile, JSON.stringify({ position: 3 }));
    const service = createAuditService({
      config: readAuditConfig({
        ZITI_EVENTS_WEBHOOK_URL: receiver.url,
        ZITI_EVENTS_WEBHOOK_SECRET: secret,
        ZITI_EVENTS_WEBHOOK_CHECKPOINT: checkpointFile,
        ZITI_EVENTS_RETRY_MIN_MS: '20',
      }),
      database,
      bus,
      // The owners are not there: the trail's resyncs wait for them, quietly.
      logger: createLogger('audit', 'silent'),
      ownsBus: false,
    });
    try {
      await service.start();
      await relay(
        bus,
        range(1, 6).map((n) => auditEvent(n)),
      );
      await waitFor(() => receiver.accepted.length >= 3, 'the events after the kept position');
      expect(receiver.accepted.map((a) => a.id)).toEqual(ids([4, 5, 6]));
      const [row] = await queryRows<{ position: string | number }>(
        database.db,
        'select position from sink_checkpoints where name = $1',
        [sinkDurables.webhook],
      );
      expect(Number(row?.position)).toBe(6);
      // The file is left as it was: the database has the position now.
      expect(JSON.parse(await readFile(checkpointFile, 'utf8')).position).toBe(3);
    } finally {
      await service.stop().catch(() => undefined);
      await bus.close();
      await receiver.stop();
      await rm(dir, { recursive: true, force: true });
      await made.drop();
    }
  });
});
