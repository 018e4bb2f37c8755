import { ApiError, type OperationRequest, subjects } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Bus,
  type Database,
  IdempotentReplies,
  InProcessBus,
  NatsBus,
  createLogger,
  inEventTransaction,
  migrate,
  openDatabase,
  queryRows,
  reply,
  requestFingerprint,
  serveOperations,
} from '../src/index.ts';
import { createTestDatabase, infra, uniqueName } from '../../../test/support/infra.ts';

/**
 * Issue 35 item 2: a write sent again with its `Idempotency-Key` is answered from the first
 * outcome, also when the first answer never reached the caller (a timeout), and when both run at
 * once; the key with other input is refused (422), and keys are per caller.
 */
const logger = createLogger('test', 'silent');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

for (const kind of ['nats', 'memory'] as const) {
  describe(`idempotent writes on ${kind === 'nats' ? 'NATS + Postgres' : 'the in-process bus + PGlite'}`, () => {
    let bus: Bus;
    let db: Database;
    let drop = async () => undefined as void;
    let runs = 0;

    beforeAll(async () => {
      if (kind === 'nats') {
        const made = await createTestDatabase('idem');
        drop = made.drop;
        db = await openDatabase({ url: made.url, poolSize: 4 });
        bus = await NatsBus.connect({ url: infra.natsUrl, name: 'test', namespace: uniqueName('idem'), logger });
      } else {
        db = await openDatabase({ pgliteMemory: true });
        bus = new InProcessBus();
      }
      await migrate(db, [
        { version: '0001_things', sql: 'create table things (id serial primary key, name text not null);' },
      ]);
      serveOperations(
        bus,
        'auth',
        {
          'management.createIdentity': async (req: OperationRequest) => {
            runs++;
            const body = req.body as { name: string; delayMs?: number };
            const [row] = await inEventTransaction(db, 'auth', undefined, async (tx) => {
              if (body.delayMs) await sleep(body.delayMs);
              return queryRows<{ id: number }>(tx, 'insert into things (name) values ($1) returning id', [body.name]);
            });
            if (body.name.startsWith('fail')) throw new ApiError('COULD_NOT_VALIDATE', 'after the write');
            return reply.created(String(row!.id), 'identities');
          },
        },
        logger,
        undefined,
        new IdempotentReplies(db, logger),
      );
    });
    afterAll(async () => {
      await bus?.close();
      await db?.close();
      await drop();
    });

    const send = (
      body: Record<string, unknown>,
      key?: string,
      caller: string | null = 'alice',
      timeoutMs = 10_000,
      query: Record<string, unknown> = {},
    ) => {
      const request: OperationRequest = {
        requestId: uniqueName('rq'),
        api: 'management',
        operationId: 'createIdentity',
        params: {},
        query,
        body,
        headers: {},
        remoteAddress: '127.0.0.1',
        ...(caller
          ? {
              caller: {
                identityId: caller,
                apiSessionId: `${caller}-session`,
                token: 't',
                isAdmin: true,
                authQueries: [],
              },
            }
          : {}),
        ...(key ? { idempotencyKey: key } : {}),
      };
      return bus.request(subjects.operation('auth', 'management', 'createIdentity'), request, { timeoutMs });
    };
    const count = async (name: string) =>
      (await queryRows<{ n: number }>(db.db, 'select count(*)::int as n from things where name = $1', [name]))[0]!.n;
    const errorOf = (p: Promise<unknown>) => p.then(() => undefined).catch((err: unknown) => err);

    it('answers a repeat from the first outcome and writes once', async () => {
      const name = uniqueName('thing');
      const first = (await send({ name }, `k-${name}`)) as { status: number; body: unknown };
      const again = (await send({ name }, `k-${name}`)) as { status: number; body: unknown; headers?: unknown };
      expect(first.status).toBe(201);
      expect(again.body).toEqual(first.body);
      expect(again.headers).toEqual({ 'idempotent-replayed': 'true' });
      expect(await count(name)).toBe(1);
      // Without a key, or with another caller's same key, it is a new write.
      await send({ name });
      await send({ name }, `k-${name}`, 'bob');
      expect(await count(name)).toBe(3);
    });

    it('refuses the key with other input', async () => {
      const name = uniqueName('thing');
      await send({ name }, `k-${name}`);
      const err = await errorOf(send({ name: `${name}-other` }, `k-${name}`));
      expect((err as ApiError).code).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await count(`${name}-other`)).toBe(0);
    });

    it('answers the retry of a write whose first answer timed out from what the write did', async () => {
      const name = uniqueName('slow');
      // The caller stops waiting after 300 ms (its connection dropped, say); the write commits after ~600 ms.
      const first = send({ name, delayMs: 600 }, `k-${name}`, 'alice', 10_000);
      const gaveUp = await Promise.race([first.then(() => 'answered'), sleep(300).then(() => 'gave up')]);
      expect(gaveUp).toBe('gave up');
      const answered = (await first) as { status: number; body: unknown };
      const retried = (await send({ name, delayMs: 600 }, `k-${name}`)) as { body: unknown };
      expect(retried.body).toEqual(answered.body);
      expect(await count(name)).toBe(1);
    });

    it('writes once when two sends of a key run at once', async () => {
      const name = uniqueName('twin');
      const before = runs;
      const outcomes = await Promise.allSettled([
        send({ name, delayMs: 300 }, `k-${name}`),
        send({ name, delayMs: 300 }, `k-${name}`),
      ]);
      expect(runs - before).toBe(2);
      expect(await count(name)).toBe(1);
      const codes = outcomes.map((o) =>
        o.status === 'fulfilled' ? (o.value as { status: number }).status : (o.reason as ApiError).code,
      );
      // The one that lost the claim is answered from the first outcome, or told it is in progress.
      expect(codes).toContain(201);
      for (const c of codes) expect([201, 'IDEMPOTENCY_KEY_IN_USE']).toContain(c);
    });

    it('keeps no hash of a secret: the fingerprint leaves secret-named values out', async () => {
      const name = uniqueName('secretive');
      const first = (await send({ name, password: 'first-password-1' }, `k-${name}`)) as { body: unknown };
      const [row] = await queryRows<{ fingerprint: string }>(
        db.db,
        'select fingerprint from idempotent_requests where key = $1',
        [`k-${name}`],
      );
      const request = (password: string): OperationRequest => ({
        requestId: 'r',
        api: 'management',
        operationId: 'createIdentity',
        params: {},
        query: {},
        body: { name, password },
        headers: {},
        remoteAddress: '127.0.0.1',
      });
      expect(row!.fingerprint).toBe(requestFingerprint('management.createIdentity', request('any other')));
      // So a repeat that differs only in the secret is the same write, answered from the first.
      const again = (await send({ name, password: 'second-password-2' }, `k-${name}`)) as { body: unknown };
      expect(again.body).toEqual(first.body);
      expect(await count(name)).toBe(1);
    });

    it('keys a write without a session by the token it spends, and not at all without one', async () => {
      const name = uniqueName('enrolling');
      const token = (t: string) => ({ token: `${name}-${t}` });
      const first = (await send({ name }, `k-${name}`, null, 10_000, token('a'))) as { body: unknown };
      const again = (await send({ name }, `k-${name}`, null, 10_000, token('a'))) as {
        body: unknown;
        headers?: unknown;
      };
      expect(again.body).toEqual(first.body);
      expect(again.headers).toEqual({ 'idempotent-replayed': 'true' });
      expect(await count(name)).toBe(1);
      // Another token's key is its own, and a write with no token is never answered from a key.
      await send({ name }, `k-${name}`, null, 10_000, token('b'));
      await send({ name }, `k-${name}`, null);
      await send({ name }, `k-${name}`, null);
      expect(await count(name)).toBe(4);
      const [row] = await queryRows<{ caller: string }>(
        db.db,
        'select caller from idempotent_requests where key = $1 order by claimed_at limit 1',
        [`k-${name}`],
      );
      expect(row!.caller).toMatch(/^token:[0-9a-f]{64}$/);
      expect(row!.caller).not.toContain(name);
    });

    it('repeats the error of a write that committed before it failed, and does not write again', async () => {
      const name = uniqueName('fail');
      const first = await errorOf(send({ name }, `k-${name}`));
      const again = await errorOf(send({ name }, `k-${name}`));
      expect((first as ApiError).code).toBe('COULD_NOT_VALIDATE');
      expect((again as ApiError).code).toBe('COULD_NOT_VALIDATE');
      expect(await count(name)).toBe(1);
    });
  });
}
