import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, base, startE2e } from '../support/e2e.ts';
import { startEmbedded } from '../support/embedded.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * The change feed end to end (issue 24): changes made through the management API reach the audit
 * service as events, come back as `auditRecord.created` with their entity change, and stream to an
 * administrator over Server-Sent Events from JetStream; a subscriber that reconnects with
 * Last-Event-ID gets exactly what it missed. The export streams the trail as JSON lines.
 */
let e: E2e;

beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

interface Message {
  id?: string;
  event?: string;
  data: string;
}

interface Change {
  namespace: string;
  eventType: 'created' | 'updated' | 'deleted';
  entityType: string;
  eventId: string;
  timestamp: string;
  metadata: { author?: { id: string }; source?: { remoteAddr?: string }; operation?: string };
  initialState?: Record<string, unknown> | null;
  finalState?: Record<string, unknown> | null;
}

/** An SSE subscriber over HTTPS (trusting only the controller CA), parsing messages as they come. */
function subscribe(
  query: string,
  headers: Record<string, string> = {},
  target: { baseUrl: string; ca: string; token: string } = {
    baseUrl: e.cluster.baseUrl,
    ca: e.caPems.join(''),
    token: e.adminToken,
  },
) {
  const url = new URL(target.baseUrl);
  const messages: Message[] = [];
  let response: IncomingMessage | undefined;
  let buffer = '';
  let ended = false;
  const ready = new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${base.management}/extensions/events${query}`,
        headers: { accept: 'text/event-stream', 'zt-session': target.token, ...headers },
        ca: target.ca,
        servername: 'localhost',
        agent: false,
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
            for (const line of block.split('\n')) {
              if (line.startsWith(':')) continue;
              const colon = line.indexOf(':');
              const field = line.slice(0, colon);
              const value = line.slice(colon + 1).replace(/^ /, '');
              if (field === 'id') message.id = value;
              else if (field === 'event') message.event = value;
              else if (field === 'data') data.push(value);
            }
            if (data.length === 0) continue;
            message.data = data.join('\n');
            messages.push(message);
          }
        });
        res.on('end', () => (ended = true));
        res.on('error', () => (ended = true));
        resolve(res);
      },
    );
    req.on('error', reject);
    req.end();
  });
  return {
    messages,
    ready,
    ended: () => ended,
    changes: () => messages.filter((m) => m.event !== 'error').map((m) => JSON.parse(m.data) as Change),
    close: () => response?.destroy(),
  };
}

const named = (prefix: string) => `?entityType=identities&filter=${encodeURIComponent(`name contains "${prefix}"`)}`;

async function createIdentity(name: string): Promise<string> {
  const res = await e.call('management', {
    method: 'POST',
    path: '/identities',
    token: e.adminToken,
    body: { name, type: 'User', isAdmin: false },
  });
  expect(res.status).toBe(201);
  return res.json.data.id as string;
}

async function patchIdentity(id: string, body: Record<string, unknown>) {
  const res = await e.call('management', { method: 'PATCH', path: `/identities/${id}`, token: e.adminToken, body });
  expect(res.status).toBe(200);
}

async function deleteIdentity(id: string) {
  const res = await e.call('management', { method: 'DELETE', path: `/identities/${id}`, token: e.adminToken });
  expect(res.status).toBe(200);
}

describe('GET /extensions/events on the cluster', () => {
  it('streams the changes made through the management API, in order, as entityChange events', async () => {
    const prefix = uniqueName('sse');
    const s = subscribe(named(prefix));
    const res = await s.ready;
    expect(res.statusCode).toBe(200);
    e.validator.validate(
      'management',
      'GET',
      `${base.management}/extensions/events`,
      200,
      undefined,
      String(res.headers['content-type']),
    );
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');

    const name = `${prefix}-one`;
    const id = await createIdentity(name);
    await patchIdentity(id, { roleAttributes: ['sse-web'] });
    await deleteIdentity(id);
    // Another entity type and another name: both filtered out.
    await createIdentity(uniqueName('other'));
    await waitFor(() => s.messages.length >= 3, 'three changes', 30_000);

    const changes = s.changes();
    expect(changes.map((c) => c.eventType)).toEqual(['created', 'updated', 'deleted']);
    expect(s.messages.map((m) => m.event)).toEqual(['created', 'updated', 'deleted']);
    for (const c of changes) {
      expect(c.namespace).toBe('entityChange');
      expect(c.entityType).toBe('identities');
    }
    expect(changes[0]!.finalState).toMatchObject({ id, name, roleAttributes: [] });
    expect(changes[1]!.finalState).toMatchObject({ id, name, roleAttributes: ['sse-web'] });
    expect(changes[2]!.initialState).toMatchObject({ id, name });
    expect(changes[2]!.finalState ?? null).toBeNull();
    // Ids are stream positions: integers, increasing.
    const ids = s.messages.map((m) => Number(m.id));
    expect(ids.every((n) => Number.isSafeInteger(n) && n > 0)).toBe(true);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    s.close();
  });

  it('a subscriber disconnected mid-stream resumes with Last-Event-ID and gets exactly what it missed', async () => {
    const prefix = uniqueName('resume');
    const first = subscribe(named(prefix));
    await first.ready;
    const before = [await createIdentity(`${prefix}-a1`), await createIdentity(`${prefix}-a2`)];
    await waitFor(() => first.messages.length >= 2, 'the first two', 30_000);
    expect(first.changes().map((c) => c.finalState!.id)).toEqual(before);
    const lastId = first.messages.at(-1)!.id!;
    first.close();

    // Changes while nobody listens.
    const missedIds = [await createIdentity(`${prefix}-b1`), await createIdentity(`${prefix}-b2`)];
    await patchIdentity(missedIds[0]!, { roleAttributes: ['resumed'] });
    await deleteIdentity(before[0]!);
    // The audit service made the records of the changes missed (the feed comes from them).
    await waitFor(
      async () => {
        const res = await e.call('management', {
          path: `/extensions/audit-records?filter=${encodeURIComponent(`entityName contains "${prefix}"`)}&limit=100`,
          token: e.adminToken,
        });
        return res.status === 200 && (res.json.data as unknown[]).length >= 6;
      },
      'the audit records',
      30_000,
    );

    const resumed = subscribe(named(prefix), { 'last-event-id': lastId });
    await resumed.ready;
    await waitFor(() => resumed.messages.length >= 4, 'the missed changes', 30_000);
    // A change made after reconnecting ends the sequence: nothing else may come between.
    const after = await createIdentity(`${prefix}-c1`);
    await waitFor(() => resumed.messages.length >= 5, 'the live change', 30_000);

    const got = resumed.changes().map((c) => [c.eventType, (c.finalState ?? c.initialState)!.id]);
    expect(got).toEqual([
      ['created', missedIds[0]],
      ['created', missedIds[1]],
      ['updated', missedIds[0]],
      ['deleted', before[0]],
      ['created', after],
    ]);
    expect(Number(resumed.messages[0]!.id)).toBeGreaterThan(Number(lastId));
    expect(resumed.messages.some((m) => m.event === 'error')).toBe(false);
    resumed.close();
  });

  it('replays a backlog of large changes far past the queue bounds in full, to a prompt reader and to one that stalls', async () => {
    // 100 changes of about 250 KB each (the state before and after, two 60 KB tags): some 25 MB,
    // six times what may wait for a live subscriber (4 MiB).
    const prefix = uniqueName('backlog');
    const live = subscribe(named(prefix));
    await live.ready;
    const id = await createIdentity(`${prefix}-big`);
    await waitFor(() => live.messages.length >= 1, 'the create', 30_000);
    const lastId = live.messages[0]!.id!;
    for (let i = 0; i < 100; i++)
      await patchIdentity(id, { tags: { i, a: `${i}`.padEnd(60_000, 'a'), b: `${i}`.padEnd(60_000, 'b') } });
    await waitFor(() => live.messages.length >= 101, 'every change at the live subscriber', 60_000);
    const feed = live.changes().slice(1);
    expect(feed.map((c) => c.finalState!.tags)).toHaveLength(100);

    const replayStarted = Date.now();
    const prompt = subscribe(named(prefix), { 'last-event-id': lastId });
    const stalling = subscribe(named(prefix), { 'last-event-id': lastId });
    const stalled = await stalling.ready;
    await prompt.ready;
    stalled.pause();
    await waitFor(() => prompt.messages.length >= 100, 'the replay at the prompt reader', 60_000);
    const seconds = (Date.now() - replayStarted) / 1000;
    const megabytes = prompt.messages.reduce((n, m) => n + m.data.length, 0) / 1e6;
    console.log(
      `replayed ${prompt.messages.length} changes (${megabytes.toFixed(1)} MB) to a prompt reader in ${seconds.toFixed(2)} s: ${(megabytes / seconds).toFixed(1)} MB/s`,
    );
    // The stalled reader is held back meanwhile (its socket cannot take 25 MB), never cut off.
    expect(stalling.messages.length).toBeLessThan(100);
    stalled.resume();
    await waitFor(() => stalling.messages.length >= 100, 'the replay at the reader that stalled', 60_000);
    for (const r of [prompt, stalling]) {
      expect(r.messages.some((m) => m.event === 'error')).toBe(false);
      expect(r.changes().map((c) => c.eventId)).toEqual(feed.map((c) => c.eventId));
      expect(r.messages.map((m) => m.id)).toEqual(live.messages.slice(1).map((m) => m.id));
      expect(r.ended()).toBe(false);
      r.close();
    }
    live.close();
  });

  it('refuses a non-admin as every admin operation does', async () => {
    const user = await e.createUser();
    const stream = await e.call('management', {
      path: '/extensions/events',
      token: user.token,
      headers: { accept: 'text/event-stream' },
    });
    const list = await e.call('management', { path: '/extensions/audit-records', token: user.token });
    const exported = await e.call('management', { path: '/extensions/audit-records/export', token: user.token });
    expect(stream.status).toBe(401);
    expect(stream.json.error.code).toBe('UNAUTHORIZED');
    expect([list.status, list.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
    expect([exported.status, exported.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('answers a bad filter or position with a 400 envelope before the stream starts', async () => {
    const filter = await e.call('management', {
      path: `/extensions/events?filter=${encodeURIComponent('name = ')}`,
      token: e.adminToken,
      headers: { accept: 'text/event-stream' },
    });
    expect(filter.status).toBe(400);
    expect(filter.json.error.code).toBe('INVALID_FILTER');
    const eventType = await e.call('management', { path: '/extensions/events?eventType=renamed', token: e.adminToken });
    expect(eventType.status).toBe(400);
    expect(eventType.json.error.code).toBe('COULD_NOT_VALIDATE');
    const position = await e.call('management', { path: '/extensions/events?lastEventId=abc', token: e.adminToken });
    expect(position.status).toBe(400);
    expect(position.json.error.cause.field).toBe('lastEventId');
  });
});

describe('GET /extensions/audit-records/export on the cluster', () => {
  it('streams the records a filter selects as JSON lines, and answers a bad filter with 400', async () => {
    const prefix = uniqueName('export');
    const ids = [await createIdentity(`${prefix}-1`), await createIdentity(`${prefix}-2`)];
    const filter = encodeURIComponent(`entityName contains "${prefix}"`);
    let lines: { entityId?: string; action: string; category: string }[] = [];
    await waitFor(
      async () => {
        const res = await e.call('management', {
          path: `/extensions/audit-records/export?filter=${filter}`,
          token: e.adminToken,
        });
        expect(res.status).toBe(200);
        expect(String(res.headers['content-type'])).toBe('application/x-ndjson; charset=utf-8');
        lines = res.text
          .split('\n')
          .filter((l) => l !== '')
          .map((l) => JSON.parse(l));
        return lines.length >= 2;
      },
      'the exported records',
      30_000,
    );
    expect(lines.map((l) => [l.category, l.action, l.entityId])).toEqual([
      ['change', 'created', ids[0]],
      ['change', 'created', ids[1]],
    ]);
    const bad = await e.call('management', {
      path: `/extensions/audit-records/export?filter=${encodeURIComponent('nope = 1')}`,
      token: e.adminToken,
    });
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe('INVALID_FILTER');
  });
});

describe('the event stream under npm start (in-process bus)', () => {
  it('streams changes and resumes after Last-Event-ID from the in-memory window', async () => {
    const embedded = await startEmbedded();
    try {
      const target = {
        baseUrl: `https://127.0.0.1:${embedded.port}`,
        ca: embedded.caPems.join(''),
        token: embedded.adminToken,
      };
      const create = async (name: string) => {
        const res = await embedded.call('management', {
          method: 'POST',
          path: '/identities',
          token: embedded.adminToken,
          body: { name, type: 'User', isAdmin: false },
        });
        expect(res.status).toBe(201);
        return res.json.data.id as string;
      };
      const prefix = uniqueName('embedded');
      const first = subscribe(named(prefix), {}, target);
      expect((await first.ready).statusCode).toBe(200);
      const one = await create(`${prefix}-1`);
      await waitFor(() => first.messages.length >= 1, 'the first change', 30_000);
      expect(first.changes()[0]).toMatchObject({
        eventType: 'created',
        entityType: 'identities',
        finalState: { id: one },
      });
      const lastId = first.messages[0]!.id!;
      first.close();

      const missed = [await create(`${prefix}-2`), await create(`${prefix}-3`)];
      const resumed = subscribe(named(prefix), { 'last-event-id': lastId }, target);
      await resumed.ready;
      await waitFor(() => resumed.messages.length >= 2, 'the missed changes', 30_000);
      const live = await create(`${prefix}-4`);
      await waitFor(() => resumed.messages.length >= 3, 'the live change', 30_000);
      expect(resumed.changes().map((c) => c.finalState!.id)).toEqual([...missed, live]);
      resumed.close();
    } finally {
      await embedded.stop();
    }
  });
});
