import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, createServer, get } from 'node:http';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { PGlite } from '@electric-sql/pglite';
import { ApiError, type OperationRequest, queueGroup, subjects } from '@ziti/contracts';
import { InProcessBus, MemoryApiSessionStore, createLogger } from '@ziti/platform';
import { buildListQuery, defineQueryEntity, scalar, selectSql } from '@ziti/zitiql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayApp } from '../app.ts';
import { readGatewayConfig } from '../config.ts';
import type { Response } from '../pipeline/pipeline.transport.ts';
import { exportPlanOf, nextCursor, pageQuery } from './audit-export.domain.ts';
import { auditExportHandler } from './audit-export.transport.ts';

/**
 * The export over HTTP, paging a stand-in for the audit service's `listAuditRecords` on the
 * in-process bus: the same ZitiQL list machinery over a real (PGlite) table, so keyset pages, sorts,
 * skips, limits and bad filters behave as the list does.
 */
const path = '/edge/management/v1/extensions/audit-records/export';
const total = 1234;
let db: PGlite;
let server: Server;
let port = 0;
let adminToken = '';
let userToken = '';
const bus = new InProcessBus();
const pageRequests: Record<string, unknown>[] = [];

const records = defineQueryEntity({
  table: 'audit_records',
  alias: 'r',
  fields: {
    id: scalar('r.id', 'string'),
    at: scalar('r.at', 'datetime'),
    action: scalar('r.action', 'string'),
    actorName: scalar('r.actor_name', 'string'),
  },
});

interface Row {
  id: string;
  at: string;
  action: string;
  actorName: string;
  pad: string;
}
const rows: Row[] = [];

beforeAll(async () => {
  db = await PGlite.create();
  await db.exec(`create table audit_records (id text primary key, at timestamptz not null, action text not null,
    actor_name text not null, pad text not null)`);
  const start = Date.parse('2024-01-01T00:00:00Z');
  for (let i = 0; i < total; i++) {
    // Several records share a millisecond: the keyset's tie-break on id must hold.
    const at = new Date(start + Math.floor(i / 3) * 7).toISOString();
    rows.push({
      id: `rec-${String((i * 7919) % total).padStart(5, '0')}`,
      at,
      action: i % 4 === 0 ? 'deleted' : 'created',
      actorName: `actor-${i % 10}`,
      pad: 'p'.repeat(10_000),
    });
  }
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    const values = chunk.map((_, j) => `($${j * 5 + 1}, $${j * 5 + 2}, $${j * 5 + 3}, $${j * 5 + 4}, $${j * 5 + 5})`);
    await db.query(
      `insert into audit_records values ${values.join(', ')}`,
      chunk.flatMap((r) => [r.id, r.at, r.action, r.actorName, r.pad]),
    );
  }
  bus.serve(subjects.operations('audit'), queueGroup('audit'), async (payload) => {
    const req = payload as OperationRequest;
    if (req.operationId !== 'listAuditRecords') throw new ApiError('NOT_IMPLEMENTED');
    pageRequests.push(req.query);
    const list = buildListQuery(records, req.query as never);
    const sql = selectSql(records, list, 'r.id, r.at, r.action, r.actor_name, r.pad');
    const result = await db.query<{ id: string; at: Date; action: string; actor_name: string; pad: string }>(
      sql.text,
      sql.params,
    );
    return {
      status: 200,
      body: {
        data: result.rows.map((r) => ({
          id: r.id,
          at: r.at.toISOString(),
          action: r.action,
          actorName: r.actor_name,
          pad: r.pad,
        })),
        meta: {},
      },
    };
  });
  const sessions = new MemoryApiSessionStore();
  const session = async (isAdmin: boolean) => {
    const token = randomUUID();
    const now = new Date().toISOString();
    await sessions.create(
      {
        id: randomUUID(),
        token,
        identityId: 'someone',
        identityName: 'someone',
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
    return token;
  };
  adminToken = await session(true);
  userToken = await session(false);
  const logger = createLogger('gateway', 'silent');
  const app = createGatewayApp({ config: readGatewayConfig({}), bus, sessions, logger });
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
}, 120_000);

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await bus.close();
  await db?.close();
});

function sorted(list: Row[], key: (r: Row) => string, desc = false): Row[] {
  return [...list].sort((a, b) => {
    const x = key(a);
    const y = key(b);
    const order = x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    return desc && x !== y ? -order : order;
  });
}
const oldestFirst = () => sorted(rows, (r) => r.at);

function fetchExport(
  query: string,
  token = adminToken,
  onResponse?: (res: IncomingMessage) => void,
): Promise<{ status: number; type: string; text: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: `${path}${query}`, headers: { 'zt-session': token } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text, complete: true }),
      );
      res.on('error', () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), text, complete: false }),
      );
      onResponse?.(res);
    }).on('error', reject);
  });
}

const lines = (text: string) =>
  text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Row);
const ids = (list: Row[]) => list.map((r) => r.id);

describe('GET /extensions/audit-records/export', () => {
  it('streams every record as JSON lines, oldest first, each once, page by page', async () => {
    pageRequests.length = 0;
    const res = await fetchExport('');
    expect(res.status).toBe(200);
    expect(res.type).toBe('application/x-ndjson; charset=utf-8');
    const got = lines(res.text);
    expect(got).toHaveLength(total);
    expect(ids(got)).toEqual(ids(oldestFirst()));
    expect(got[0]).toEqual(oldestFirst()[0]);
    // The app pages by 500 (the list's largest page): three pages for 1234 records.
    expect(pageRequests).toHaveLength(3);
  });

  it('applies the filter, its skip and its limit', async () => {
    const deleted = oldestFirst().filter((r) => r.action === 'deleted');
    const all = lines((await fetchExport(`?filter=${encodeURIComponent('action = "deleted"')}`)).text);
    expect(ids(all)).toEqual(ids(deleted));
    const some = lines((await fetchExport(`?filter=${encodeURIComponent('action = "deleted" skip 5 limit 3')}`)).text);
    expect(ids(some)).toEqual(ids(deleted.slice(5, 8)));
    const none = await fetchExport(`?filter=${encodeURIComponent('action = "nothing"')}`);
    expect([none.status, none.text]).toEqual([200, '']);
  });

  it('follows a sort given in the filter or as the sort parameter', async () => {
    const byActor = sorted(rows, (r) => r.actorName, true);
    const inFilter = lines((await fetchExport(`?filter=${encodeURIComponent('true sort by actorName desc')}`)).text);
    expect(ids(inFilter)).toEqual(ids(byActor));
    const asParameter = lines((await fetchExport(`?sort=${encodeURIComponent('actorName desc')}`)).text);
    expect(ids(asParameter)).toEqual(ids(byActor));
  });

  it('answers a bad filter with the list’s 400 before the first byte', async () => {
    const syntax = await fetchExport(`?filter=${encodeURIComponent('action = ')}`);
    expect(syntax.status).toBe(400);
    expect(syntax.type).toMatch(/^application\/json/);
    expect(JSON.parse(syntax.text).error.code).toBe('INVALID_FILTER');
    // The audit service finds this one: the same answer as its list gives.
    const unknown = await fetchExport(`?filter=${encodeURIComponent('nope = 1')}`);
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.text).error).toMatchObject({
      code: 'INVALID_FILTER',
      cause: { message: "unknown symbol 'nope'" },
    });
    const sort = await fetchExport(`?sort=${encodeURIComponent('nope')}`);
    expect(sort.status).toBe(400);
    expect(JSON.parse(sort.text).error.code).toBe('INVALID_SORT_IDENTIFIER');
  });

  it('refuses a non-admin', async () => {
    const res = await fetchExport('', userToken);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).error.code).toBe('UNAUTHORIZED');
  });

  it('asks for the next page only once the response took the last (bounded memory)', async () => {
    pageRequests.length = 0;
    // A response whose writes complete only when the test lets them: a client that does not read.
    const held: (() => void)[] = [];
    let text = '';
    const res = Object.assign(
      new Writable({
        highWaterMark: 64 * 1024,
        write(chunk: Buffer, _encoding, done) {
          text += chunk.toString();
          held.push(done);
        },
      }),
      { statusCode: 0, headers: {} as Record<string, unknown> },
    );
    const response = Object.assign(res, {
      setHeader: (name: string, value: unknown) => (res.headers[name] = value),
    }) as unknown as Response;
    const handler = auditExportHandler({ bus, logger: createLogger('gateway', 'silent') });
    const request = {
      requestId: 'r',
      api: 'management',
      operationId: 'exportAuditRecords',
      params: {},
      query: {},
      headers: {},
      remoteAddress: '127.0.0.1',
    } as OperationRequest;
    const serving = handler.serve(request, { req: {} as never, res: response });
    const deadline = Date.now() + 10_000;
    while (held.length === 0 && Date.now() < deadline) await sleep(5);
    await sleep(200);
    // One page was asked for and handed to the response, which has not taken it: no second page.
    expect(pageRequests).toHaveLength(1);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/x-ndjson; charset=utf-8');
    const release = setInterval(() => held.splice(0).forEach((done) => done()), 5);
    await serving;
    clearInterval(release);
    held.splice(0).forEach((done) => done());
    expect(pageRequests).toHaveLength(3);
    expect(ids(lines(text))).toEqual(ids(oldestFirst()));
  });
});

describe('export paging plans', () => {
  it('pages by keyset after the last record, oldest first', () => {
    const plan = exportPlanOf('action = "created" skip 2 limit 10', undefined);
    expect(plan).toMatchObject({ condition: 'action = "created"', keyset: true, skip: 2, limit: 10 });
    expect(pageQuery(plan, { kind: 'start' }, 50)).toEqual({
      filter: '(action = "created") sort by at asc, id asc skip 2 limit 50',
    });
    const after = nextCursor(plan, { kind: 'start' }, 50, { at: '2024-01-01T00:00:00.123Z', id: 'a"b' });
    expect(pageQuery(plan, after, 50)).toEqual({
      filter:
        '(action = "created") and (at > datetime(2024-01-01T00:00:00.123Z) or (at = datetime(2024-01-01T00:00:00.123Z) and id > "a\\"b")) sort by at asc, id asc limit 50',
    });
  });

  it('pages by offset under a caller’s sort, and stops where the list cannot go', () => {
    const plan = exportPlanOf('isEmpty(from x where a = 1 limit 2) sort by actorName desc limit none', 'ignored');
    expect(plan).toMatchObject({ condition: 'isEmpty(from x where a = 1 limit 2)', keyset: false, skip: 0 });
    expect(plan.limit).toBeUndefined();
    expect(pageQuery(plan, { kind: 'start' }, 10)).toEqual({
      filter: '(isEmpty(from x where a = 1 limit 2)) sort by actorName desc limit 10',
      sort: 'ignored',
    });
    expect(pageQuery(plan, nextCursor(plan, { kind: 'start' }, 10, undefined), 10)?.filter).toMatch(
      / skip 10 limit 10$/,
    );
    expect(pageQuery(plan, { kind: 'offset', offset: 100_001 }, 10)).toBeUndefined();
    expect(exportPlanOf(undefined, 'at desc')).toMatchObject({ keyset: false, sortParam: 'at desc' });
    expect(exportPlanOf('  ', undefined)).toEqual({ sort: [], keyset: true, skip: 0 });
    expect(exportPlanOf('limit 5', undefined)).toMatchObject({ keyset: true, limit: 5 });
  });
});
