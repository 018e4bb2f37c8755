import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, createServer, get } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityChangeEvent } from '@ziti/contracts';
import { type EventEnvelope, InProcessBus, MemoryApiSessionStore, createLogger } from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../app.ts';
import { readGatewayConfig } from '../config.ts';
import { type EventStreamOptions, EventStreams, changeFeedSubject } from './event-stream.transport.ts';

/**
 * The event stream over HTTP, on the in-process bus: the gateway app with an in-memory session
 * store, the audit service's `auditRecord.created` events published by the test itself.
 */
const base = '/edge/management/v1/extensions/events';
const running: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

async function gateway(options: Partial<EventStreamOptions> = {}, window = 50) {
  const bus = new InProcessBus({ followWindow: { events: window, bytes: 128 * 1024 * 1024 } });
  const sessions = new MemoryApiSessionStore();
  const logger = createLogger('gateway', 'silent');
  const streams = new EventStreams({ bus, sessions, sessionTimeoutSeconds: 1800, logger, options });
  const app = createGatewayApp({ config: readGatewayConfig({}), bus, sessions, logger, eventStreams: streams });
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  async function session(isAdmin: boolean) {
    const token = randomUUID();
    const now = new Date().toISOString();
    const id = randomUUID();
    await sessions.create(
      {
        id,
        token,
        identityId: `identity-${id}`,
        identityName: 'tester',
        isAdmin,
        authenticatorId: 'a',
        authMethod: 'password',
        ipAddress: '127.0.0.1',
        configTypes: [],
        isMfaRequired: false,
        isMfaComplete: false,
        tags: {},
        createdAt: now,
        updatedAt: now,
      },
      1800,
    );
    return { id, token };
  }
  const admin = await session(true);
  const g = {
    bus,
    sessions,
    streams,
    port,
    admin,
    session,
    close: async () => {
      await streams.closeAll(1_000);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await bus.close();
    },
  };
  running.push(g);
  return g;
}

let counter = 0;
function change(over: Partial<EntityChangeEvent> = {}): EntityChangeEvent {
  counter++;
  return {
    namespace: 'entityChange',
    event_src_id: 'ctrl',
    timestamp: new Date().toISOString(),
    eventId: `auth:${counter}`,
    eventType: 'created',
    metadata: { version: 'v1' },
    entityType: 'identities',
    isParentEvent: false,
    initialState: null,
    finalState: { id: `i${counter}`, name: `name-${counter}` },
    ...over,
  };
}

function envelope(data: unknown): EventEnvelope {
  counter++;
  return {
    id: `audit:${counter}`,
    type: 'auditRecord.created',
    version: 1,
    source: 'audit',
    sequence: counter,
    occurredAt: new Date().toISOString(),
    data,
  };
}

async function publishChange(bus: InProcessBus, c: EntityChangeEvent) {
  await bus.publish(changeFeedSubject, envelope({ record: { id: c.eventId }, change: c }));
}

interface Message {
  id?: string;
  event?: string;
  data: string;
}

/** An SSE client: parses messages and comments as they come. */
function subscribe(port: number, token: string, query = '', headers: Record<string, string> = {}) {
  const messages: Message[] = [];
  const comments: string[] = [];
  let buffer = '';
  let response: IncomingMessage | undefined;
  let ended = false;
  const ready = new Promise<IncomingMessage>((resolve, reject) => {
    const req = get(
      {
        host: '127.0.0.1',
        port,
        path: `${base}${query}`,
        headers: { accept: 'text/event-stream', 'zt-session': token, ...headers },
      },
      (res) => {
        response = res;
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const message: Message = { data: '' };
            const data: string[] = [];
            let isComment = true;
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) {
                comments.push(line.slice(1).trim());
                continue;
              }
              isComment = false;
              const colon = line.indexOf(':');
              const field = line.slice(0, colon);
              const value = line.slice(colon + 1).replace(/^ /, '');
              if (field === 'id') message.id = value;
              else if (field === 'event') message.event = value;
              else if (field === 'data') data.push(value);
            }
            if (isComment) continue;
            message.data = data.join('\n');
            if (data.length > 0) messages.push(message);
          }
        });
        res.on('end', () => {
          ended = true;
        });
        res.on('error', () => {
          ended = true;
        });
        resolve(res);
      },
    );
    req.on('error', reject);
  });
  return {
    messages,
    comments,
    ready,
    ended: () => ended,
    changes: () => messages.filter((m) => m.event !== 'error').map((m) => JSON.parse(m.data) as EntityChangeEvent),
    close: () => response?.destroy(),
    response: () => response!,
  };
}

async function waitFor(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

async function getJson(port: number, path: string, token: string, accept = 'application/json') {
  return new Promise<{ status: number; type: string; json: { error?: { code: string; cause?: unknown } } }>(
    (resolve, reject) => {
      get({ host: '127.0.0.1', port, path, headers: { accept, 'zt-session': token } }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), json: JSON.parse(text) }),
        );
      }).on('error', reject);
    },
  );
}

describe('GET /extensions/events', () => {
  it('streams each change as it happens: id its position, event its eventType, data the change', async () => {
    const g = await gateway();
    const s = subscribe(g.port, g.admin.token);
    const res = await s.ready;
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    const sent = [change(), change({ eventType: 'updated' }), change({ eventType: 'deleted', finalState: null })];
    for (const c of sent) await publishChange(g.bus, c);
    // An authentication record carries no change: not streamed.
    await g.bus.publish(changeFeedSubject, envelope({ record: { id: 'login' } }));
    await waitFor(() => s.messages.length === 3, 'three messages');
    expect(s.changes()).toEqual(sent);
    expect(s.messages.map((m) => m.event)).toEqual(['created', 'updated', 'deleted']);
    const ids = s.messages.map((m) => Number(m.id));
    expect(ids.every((id) => Number.isSafeInteger(id))).toBe(true);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
  });

  it('filters by entity type, event type and a ZitiQL condition on the state', async () => {
    const g = await gateway();
    const s = subscribe(
      g.port,
      g.admin.token,
      `?entityType=identities&entityType=services&eventType=created&eventType=deleted&filter=${encodeURIComponent(
        'anyOf(roleAttributes) = "web"',
      )}`,
    );
    await s.ready;
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    const web = { roleAttributes: ['web'] };
    const wanted = [
      change({ finalState: web }),
      change({ entityType: 'services', finalState: web }),
      change({ eventType: 'deleted', initialState: web, finalState: null }),
    ];
    const unwanted = [
      change({ entityType: 'configs', finalState: web }),
      change({ eventType: 'updated', finalState: web }),
      change({ finalState: { roleAttributes: ['db'] } }),
      change({ eventType: 'deleted', initialState: { roleAttributes: [] }, finalState: web }),
    ];
    for (const c of [...unwanted.slice(0, 2), wanted[0]!, ...unwanted.slice(2), wanted[1]!, wanted[2]!])
      await publishChange(g.bus, c);
    await waitFor(() => s.messages.length === 3, 'three messages');
    await sleep(30);
    expect(s.changes()).toEqual(wanted);
  });

  it('resumes after Last-Event-ID (or lastEventId) with exactly the events missed', async () => {
    const g = await gateway();
    const first = subscribe(g.port, g.admin.token);
    await first.ready;
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    const before = [change(), change()];
    for (const c of before) await publishChange(g.bus, c);
    await waitFor(() => first.messages.length === 2, 'two messages');
    const lastId = first.messages[1]!.id!;
    first.close();
    await waitFor(() => g.bus.followerCount === 0, 'the follower stopped');

    const missed = [change(), change({ eventType: 'updated' }), change()];
    for (const c of missed) await publishChange(g.bus, c);
    const resumed = subscribe(g.port, g.admin.token, '?lastEventId=1', { 'last-event-id': lastId });
    await waitFor(() => resumed.messages.length === 3, 'the missed ones');
    const live = change();
    await publishChange(g.bus, live);
    await waitFor(() => resumed.messages.length === 4, 'the live one');
    expect(resumed.changes()).toEqual([...missed, live]);

    const byParameter = subscribe(g.port, g.admin.token, `?lastEventId=${resumed.messages[2]!.id}`);
    await waitFor(() => byParameter.messages.length === 1, 'the one after');
    expect(byParameter.changes()).toEqual([live]);
  });

  it('tells a subscriber resuming before the held window that events were lost, then goes on', async () => {
    const g = await gateway();
    const first = subscribe(g.port, g.admin.token);
    await first.ready;
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    await publishChange(g.bus, change());
    await waitFor(() => first.messages.length === 1, 'one');
    const lastId = Number(first.messages[0]!.id);
    first.close();
    // The in-process bus holds 50 events: 60 more push the position out of its window.
    const later = Array.from({ length: 60 }, () => change());
    for (const c of later) await publishChange(g.bus, c);
    const resumed = subscribe(g.port, g.admin.token, '', { 'last-event-id': String(lastId) });
    await waitFor(() => resumed.messages.length === 51, 'the warning and the 50 held');
    const warning = resumed.messages[0]!;
    expect(warning.event).toBe('error');
    expect(JSON.parse(warning.data)).toMatchObject({ code: 'EVENTS_LOST', afterSequence: lastId });
    expect(resumed.changes()).toEqual(later.slice(10));
    expect(resumed.ended()).toBe(false);
  });

  it('answers a bad filter or position with a 400 envelope before the stream starts, whatever the client accepts', async () => {
    const g = await gateway();
    const bad = await getJson(
      g.port,
      `${base}?filter=${encodeURIComponent('name = ')}`,
      g.admin.token,
      'text/event-stream',
    );
    expect(bad.status).toBe(400);
    expect(bad.type).toMatch(/^application\/json/);
    expect(bad.json.error?.code).toBe('INVALID_FILTER');
    const eventType = await getJson(g.port, `${base}?eventType=renamed`, g.admin.token);
    expect(eventType.status).toBe(400);
    expect(eventType.json.error?.code).toBe('COULD_NOT_VALIDATE');
    const position = await getJson(g.port, `${base}?lastEventId=x`, g.admin.token);
    expect(position.status).toBe(400);
    expect(position.json.error?.cause).toMatchObject({ field: 'lastEventId' });
    expect(g.bus.followerCount).toBe(0);
  });

  it('answers 503 when the feed cannot be followed (the bus is down), before the stream starts', async () => {
    const g = await gateway();
    g.bus.follow = async () => {
      throw new Error('connection refused');
    };
    const res = await getJson(g.port, base, g.admin.token, 'text/event-stream');
    expect(res.status).toBe(503);
    expect(res.json.error?.code).toBe('SERVICE_UNAVAILABLE');
    expect(g.streams.size).toBe(0);
  });

  it('refuses a non-admin (and no session) exactly as the other admin operations', async () => {
    const g = await gateway();
    const user = await g.session(false);
    const stream = await getJson(g.port, base, user.token, 'text/event-stream');
    const other = await getJson(g.port, '/edge/management/v1/identities', user.token);
    const exported = await getJson(g.port, '/edge/management/v1/extensions/audit-records/export', user.token);
    expect(stream.status).toBe(401);
    expect([stream.status, stream.json.error?.code]).toEqual([other.status, other.json.error?.code]);
    expect([exported.status, exported.json.error?.code]).toEqual([other.status, other.json.error?.code]);
    const anonymous = await getJson(g.port, base, randomUUID());
    expect(anonymous.status).toBe(401);
    expect(g.bus.followerCount).toBe(0);
  });

  it('sends keepalive comments while nothing happens', async () => {
    const g = await gateway({ heartbeatMs: 40 });
    const s = subscribe(g.port, g.admin.token);
    await s.ready;
    await waitFor(() => s.comments.filter((c) => c === 'keepalive').length >= 3, 'three keepalives');
    expect(s.messages).toEqual([]);
  });

  it('stops the follower when the client goes away: nothing is left behind', async () => {
    const g = await gateway();
    const clients = Array.from({ length: 5 }, () => subscribe(g.port, g.admin.token));
    await Promise.all(clients.map((c) => c.ready));
    await waitFor(() => g.bus.followerCount === 5 && g.streams.size === 5, 'five followers');
    for (const c of clients) c.close();
    await waitFor(() => g.bus.followerCount === 0 && g.streams.size === 0, 'no follower left');
    // Events published afterwards go nowhere and break nothing.
    await publishChange(g.bus, change());
  });

  it('disconnects a subscriber that cannot keep up with a final error, and never slows the others', async () => {
    const g = await gateway({ queueMessages: 16, queueBytes: 2 * 1024 * 1024 });
    const slow = subscribe(g.port, g.admin.token);
    const fast = subscribe(g.port, g.admin.token);
    await Promise.all([slow.ready, fast.ready]);
    await waitFor(() => g.bus.followerCount === 2, 'two followers');
    slow.response().pause();
    // 38 MB in all: more than a paused client's socket buffers can take, however the kernel tunes them.
    const big = 'x'.repeat(96 * 1024);
    const count = 400;
    const started = Date.now();
    for (let i = 0; i < count; i++) {
      await publishChange(g.bus, change({ finalState: { i, big } }));
      // Events come from I/O (the outbox relay, NATS): the sockets get their turn between them.
      await new Promise((r) => setImmediate(r));
    }
    const publishing = Date.now() - started;
    await waitFor(() => fast.messages.length === count, 'every event at the fast subscriber', 20_000);
    expect(fast.changes().map((c) => c.finalState!.i)).toEqual(Array.from({ length: count }, (_, i) => i));
    // The slow subscriber's follower is gone; the fast one's is still there.
    await waitFor(() => g.bus.followerCount === 1, 'the slow follower stopped');
    slow.response().resume();
    await waitFor(() => slow.ended(), 'the slow subscriber disconnected');
    const last = slow.messages.at(-1)!;
    expect(last.event).toBe('error');
    expect(JSON.parse(last.data)).toMatchObject({ code: 'SLOW_CONSUMER' });
    expect(slow.messages.length - 1).toBeLessThan(count);
    // What it did get came in order and without a gap, so it can resume from its last id.
    const got = slow.changes().map((c) => c.finalState!.i as number);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => i));
    expect(publishing).toBeLessThan(10_000);
    expect(fast.ended()).toBe(false);
  });

  /**
   * `count` changes of mixed sizes (up to 2 KB; every 100th 96 KB; the 1,000th, 3,000th… about 900 KB,
   * near the largest entity a 1 MiB body can make), published while nobody follows; returns them and
   * the position before.
   */
  async function backlog(g: Awaited<ReturnType<typeof gateway>>, count: number) {
    const first = subscribe(g.port, g.admin.token);
    await first.ready;
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    await publishChange(g.bus, change());
    await waitFor(() => first.messages.length === 1, 'one');
    const lastId = first.messages[0]!.id!;
    first.close();
    await waitFor(() => g.bus.followerCount === 0, 'the follower stopped');
    const size = (i: number) => (i % 2_000 === 1_000 ? 900 * 1024 : i % 100 === 0 ? 96 * 1024 : (i * 37) % 2_000);
    const missed = Array.from({ length: count }, (_, i) => change({ finalState: { i, pad: 'x'.repeat(size(i)) } }));
    for (const c of missed) await publishChange(g.bus, c);
    return { lastId, missed };
  }

  it('replays a backlog far past the queue bounds to a reader resuming with Last-Event-ID, then goes on live', async () => {
    // The queue holds 16 messages or 1 MiB; the backlog is 10,000 messages and about 24 MB.
    const g = await gateway({ queueMessages: 16, queueBytes: 1024 * 1024 }, 20_000);
    const { lastId, missed } = await backlog(g, 10_000);
    const resumed = subscribe(g.port, g.admin.token, '', { 'last-event-id': lastId });
    await waitFor(() => resumed.messages.length >= 10_000, 'the whole backlog', 60_000);
    const live = change();
    await publishChange(g.bus, live);
    await waitFor(() => resumed.messages.length === 10_001, 'the live one');
    expect(resumed.messages.filter((m) => m.event === 'error')).toEqual([]);
    expect(resumed.changes()).toEqual([...missed, live]);
    expect(resumed.ended()).toBe(false);
  });

  it('a reader that stalls during the replay and reads again gets it all, in order, without being cut off', async () => {
    const g = await gateway({ queueMessages: 16, queueBytes: 1024 * 1024 }, 20_000);
    const { lastId, missed } = await backlog(g, 10_000);
    const resumed = subscribe(g.port, g.admin.token, '', { 'last-event-id': lastId });
    await resumed.ready;
    await waitFor(() => resumed.messages.length > 0, 'the replay started');
    resumed.response().pause();
    // Changes keep coming while it stalls: they join the replay after the backlog.
    const during = Array.from({ length: 200 }, () => change());
    for (const c of during) await publishChange(g.bus, c);
    // Held back meanwhile (about 24 MB, more than the socket buffers take): the follower waits, the
    // queue stays within its bounds, nothing is cut. Without the pacing this is SLOW_CONSUMER.
    expect(resumed.messages.length).toBeLessThan(10_000);
    resumed.response().resume();
    await waitFor(() => resumed.messages.length >= 10_200, 'the backlog and what came meanwhile', 60_000);
    expect(resumed.messages.filter((m) => m.event === 'error')).toEqual([]);
    expect(resumed.changes()).toEqual([...missed, ...during]);
    expect(resumed.ended()).toBe(false);
  });

  it('ends the stream when the API session ends', async () => {
    const g = await gateway({ heartbeatMs: 30 });
    const user = await g.session(true);
    const s = subscribe(g.port, user.token);
    await s.ready;
    await waitFor(() => g.bus.followerCount === 1, 'the follower');
    await g.sessions.end(user.id, 'logout');
    await waitFor(() => s.ended(), 'the stream ended');
    expect(JSON.parse(s.messages.at(-1)!.data)).toMatchObject({ code: 'SESSION_ENDED' });
    await waitFor(() => g.bus.followerCount === 0, 'the follower stopped');
  });

  it('ends every stream when the gateway stops (closeAll), so its clients reconnect elsewhere', async () => {
    const g = await gateway();
    const s = subscribe(g.port, g.admin.token);
    await s.ready;
    await waitFor(() => g.streams.size === 1, 'one subscriber');
    await g.streams.closeAll(2_000);
    await waitFor(() => s.ended(), 'the stream ended');
    expect(g.streams.size).toBe(0);
    expect(g.bus.followerCount).toBe(0);
  });
});
