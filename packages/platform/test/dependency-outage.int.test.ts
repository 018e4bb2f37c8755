import { request as httpRequest, Agent, createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { Writable } from 'node:stream';
import { ApiError } from '@ziti/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Database,
  InProcessBus,
  RedisApiSessionStore,
  createLogger,
  httpDrain,
  openDatabase,
  queryRows,
  unavailableDependency,
} from '../src/index.ts';
import { createTestDatabase, infra, waitFor } from '../../../test/support/infra.ts';

/**
 * Issue 12 items 14 and 16 at the platform's level: a dropped Postgres connection (failover,
 * `pg_terminate_backend`) never ends the process and is a 503 for the request it broke; the pool
 * serves later requests; Redis being down is a 503, logged once.
 */
function capturedLogger() {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { logger: createLogger('test', 'info', sink), lines: () => text.trim().split('\n').filter(Boolean) };
}

/** A loopback port nothing listens on. */
function deadPort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const s = createNetServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

describe('a dropped Postgres connection', () => {
  let made: Awaited<ReturnType<typeof createTestDatabase>>;
  let database: Database;
  let admin: pg.Client;
  const terminate = () =>
    admin.query(
      'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
      [made.name],
    );

  beforeAll(async () => {
    made = await createTestDatabase('outage');
    // Two connections (one held by a session each round): a client the pool kept after a failed
    // BEGIN would block every later request.
    database = await openDatabase({ url: made.url, poolSize: 2 });
    admin = new pg.Client({ connectionString: infra.postgresUrl });
    await admin.connect();
    await queryRows(database.db, 'create table t (id serial primary key, v text)');
  });
  afterAll(async () => {
    await admin?.end();
    await database?.close();
    await made?.drop();
  });

  it('fails what it broke as unavailable, releases every client, and serves the next requests', async () => {
    const failures: unknown[] = [];
    for (let round = 0; round < 15; round++) {
      // A held session (the relay's leadership lock), a transaction between statements and one
      // starting (its BEGIN on a connection that is being terminated) all see the connection go.
      const session = await database.session();
      await session.query('select 1');
      const tx = database
        .transaction(async (t) => {
          await queryRows(t, 'insert into t (v) values ($1)', [`r${round}`]);
          await new Promise((r) => setTimeout(r, 30));
          await queryRows(t, 'insert into t (v) values ($1)', [`r${round}b`]);
        })
        .catch((err: unknown) => failures.push(err));
      await terminate();
      const begun = database.transaction((t) => queryRows(t, 'select 1')).catch((err: unknown) => failures.push(err));
      await Promise.all([tx, begun]);
      await session.query('select 1').catch((err: unknown) => failures.push(err));
      session.release(true);
    }
    expect(failures.length).toBeGreaterThan(0);
    for (const err of failures) expect(unavailableDependency(err)).toBe('database');
    // The pool is usable again: nothing was leaked (a leaked client would make this wait forever).
    const bounded = <T>(p: Promise<T>) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('pool exhausted')), 5_000)),
      ]);
    const [held1, held2] = await bounded(Promise.all([database.session(), database.session()]));
    held1.release();
    held2.release();
    await waitFor(
      async () =>
        (await bounded(database.transaction((t) => queryRows<{ n: number }>(t, 'select 1 as n'))))[0]?.n === 1,
      'a transaction to succeed after the outage',
      10_000,
    );
    await expect(database.withConnection((c) => c.query<{ n: number }>('select 2 as n'))).resolves.toEqual([{ n: 2 }]);
  });

  it('is a 503 SERVICE_UNAVAILABLE on the bus, logged once, not a 500', async () => {
    const { logger, lines } = capturedLogger();
    const bus = new InProcessBus({ logger });
    let hold: (() => void) | undefined;
    bus.serve('t.slow', 'q', () =>
      database.transaction(async (t) => {
        await queryRows(t, 'insert into t (v) values ($1)', ['in flight']);
        await new Promise<void>((r) => {
          hold = r;
        });
        return queryRows(t, 'select count(*) from t');
      }),
    );
    const inFlight = bus.request('t.slow', {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    await waitFor(() => hold, 'the request to hold its transaction');
    await terminate();
    await waitFor(async () => {
      const r = await admin.query('select count(*)::int as n from pg_stat_activity where datname = $1', [made.name]);
      return r.rows[0].n === 0;
    }, 'the backend to be gone');
    hold!();
    const err = await inFlight;
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('SERVICE_UNAVAILABLE');
    expect(lines()).toHaveLength(1);
    expect(JSON.parse(lines()[0]!)).toMatchObject({ level: 40, dependency: 'database' });
    // A later request works.
    bus.serve('t.fast', 'q', () => queryRows(database.db, 'select 1 as n'));
    await expect(bus.request('t.fast', {})).resolves.toEqual([{ n: 1 }]);
    await bus.close();
  });
});

describe('Postgres not running at all', () => {
  it('every way of reaching it is recognised as the database being unavailable', async () => {
    const database = await openDatabase({ url: `postgres://postgres@127.0.0.1:${await deadPort()}/none`, poolSize: 1 });
    try {
      for (const attempt of [
        () => database.transaction((t) => queryRows(t, 'select 1')),
        () => queryRows(database.db, 'select 1'),
        () => database.withConnection((c) => c.query('select 1')),
        () => database.session(),
      ]) {
        const err = await attempt().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(unavailableDependency(err)).toBe('database');
      }
      // A refused connection elsewhere (not the database's) is not taken for one.
      expect(unavailableDependency(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
        undefined,
      );
    } finally {
      await database.close();
    }
  });
});

describe('Redis down', () => {
  it('is a 503 SERVICE_UNAVAILABLE for every session operation, logged once, no unhandled error event', async () => {
    const port = await deadPort();
    const { logger, lines } = capturedLogger();
    const store = new RedisApiSessionStore(`redis://127.0.0.1:${port}`, 'down:', { logger });
    try {
      for (const op of [
        () => store.touch('00000000-0000-4000-8000-000000000000', 60),
        () => store.recordPositions('x', { auth: 1 }, 60),
      ]) {
        const err = await op().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(ApiError);
        expect((err as ApiError).code).toBe('SERVICE_UNAVAILABLE');
      }
      expect(lines()).toHaveLength(1);
      expect(lines()[0]).toContain('redis is not available');
    } finally {
      await store.close();
    }
  });
});

describe('stopping an HTTP listener under keep-alive traffic', () => {
  it('answers in-flight and racing requests with Connection: close, resets none, and stops promptly', async () => {
    const served: string[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () =>
        setTimeout(() => {
          served.push(body);
          res.end('ok');
        }, 20),
      );
    });
    server.keepAliveTimeout = 65_000;
    const { drain } = httpDrain(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const service = {
      stop: async () => {
        await drain();
        await new Promise<void>((r) => server.close(() => r()));
      },
    };
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const acknowledged: string[] = [];
    const failures: string[] = [];
    const closeHeaders: string[] = [];
    let n = 0;
    const post = (body: string) =>
      new Promise<void>((resolve, reject) => {
        const r = httpRequest({ host: '127.0.0.1', port, agent, method: 'POST', path: '/' }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.headers.connection === 'close') closeHeaders.push(body);
            acknowledged.push(body);
            resolve();
          });
        });
        r.on('error', reject);
        r.end(body);
      });
    let stopping = false;
    const loop = async () => {
      for (;;) {
        const body = `w${++n}`;
        try {
          await post(body);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? String(err);
          if (code === 'ECONNREFUSED' && stopping) return;
          failures.push(`${body} ${code}`);
          return;
        }
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await waitFor(() => acknowledged.length > 50, 'traffic to flow');
    stopping = true;
    const started = Date.now();
    await service.stop();
    const tookMs = Date.now() - started;
    await Promise.all(loops);
    agent.destroy();
    expect(failures).toEqual([]);
    expect(tookMs).toBeLessThan(3_000);
    expect(closeHeaders.length).toBeGreaterThan(0);
    // Every acknowledged write was served (none acknowledged without the handler running).
    for (const body of acknowledged) expect(served).toContain(body);
  });
});
