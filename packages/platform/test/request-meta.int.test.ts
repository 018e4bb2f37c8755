import { type OperationRequest, eventTypes, subjects } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import {
  type Bus,
  type Database,
  type EventEnvelope,
  InProcessBus,
  NatsBus,
  OutboxRelay,
  createLogger,
  createUnitOfWork,
  migrate,
  openDatabase,
  serveOperations,
} from '../src/index.ts';
import { currentRequestMeta } from '../src/causality.ts';

/**
 * Who made a change travels with it (issue 24): the owner names the operation it serves, a bus
 * request made while serving it carries that to the next service, and every event either writes
 * stores it, so the relay publishes it on the envelope. Background work carries none.
 */
const logger = createLogger('test', 'silent');

type Setup = { bus: Bus; database: Database; cleanup: () => Promise<void> };

const setups: Record<string, () => Promise<Setup>> = {
  'NATS + Postgres': async () => {
    const db = await createTestDatabase('reqmeta');
    const bus = await NatsBus.connect({ url: infra.natsUrl, name: 'test', namespace: uniqueName('t'), logger });
    const database = await openDatabase({ url: db.url });
    return {
      bus,
      database,
      cleanup: async () => {
        await bus.close();
        await database.close();
        await db.drop();
      },
    };
  },
  'in-process + PGlite': async () => {
    const bus = new InProcessBus();
    const database = await openDatabase({ pgliteMemory: true });
    return { bus, database, cleanup: async () => (await bus.close(), await database.close()) };
  },
};

const identity = (id: string) => ({
  id,
  name: id,
  typeId: 'Default',
  isAdmin: false,
  isDefaultAdmin: false,
  roleAttributes: [],
  externalId: null,
  authPolicyId: 'default',
  disabled: false,
  tags: {},
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
});

for (const [name, make] of Object.entries(setups)) {
  describe(`request meta on ${name}`, () => {
    let s: Setup;
    let relay: OutboxRelay;
    const seen: EventEnvelope[] = [];
    const metaSeenByCallee: unknown[] = [];
    beforeAll(async () => {
      s = await make();
      await migrate(s.database, []);
      relay = new OutboxRelay(s.database, s.bus, 'auth', logger, 50);
      const work = createUnitOfWork(s.database, relay, 'auth', (_tx, events) => events);
      // The callee: a service-to-service call that writes, as another service would.
      s.bus.serve(subjects.call('auth', 'touch'), 'q', async (payload) => {
        metaSeenByCallee.push(currentRequestMeta());
        await work((events) => events.emit(eventTypes.identityUpdated, identity(String(payload))));
        return {};
      });
      // The owner of an operation: writes, then calls the callee.
      serveOperations(
        s.bus,
        'auth',
        {
          'management.createIdentity': async (req: OperationRequest) => {
            const id = String((req.body as { name: string }).name);
            await work((events) => events.emit(eventTypes.identityCreated, identity(id)));
            await s.bus.request(subjects.call('auth', 'touch'), id);
            return { status: 201, body: {} };
          },
        },
        logger,
      );
      await relay.start();
      await s.bus.consume({
        durable: uniqueName('meta'),
        subject: subjects.events,
        handler: async (batch) => {
          seen.push(...batch.map((d) => d.event));
        },
      });
    });
    afterAll(async () => {
      await relay?.stop();
      await s?.cleanup();
    });

    it('events written on behalf of an operation, here and across a call, name its caller', async () => {
      const request: OperationRequest = {
        requestId: uniqueName('req'),
        api: 'management',
        operationId: 'createIdentity',
        params: {},
        query: {},
        body: { name: uniqueName('ident') },
        headers: { 'zt-session': 'secret-token-value' },
        caller: {
          identityId: 'admin-id',
          apiSessionId: 'session-id',
          token: 'secret-token-value',
          isAdmin: true,
          authQueries: [],
        },
        remoteAddress: '127.0.0.1',
      };
      await s.bus.request(subjects.operation('auth', 'management', 'createIdentity'), request);
      const expected = {
        requestId: request.requestId,
        operation: 'management.createIdentity',
        remoteAddress: '127.0.0.1',
        identityId: 'admin-id',
        apiSessionId: 'session-id',
      };
      expect(metaSeenByCallee).toEqual([expected]);
      const name = (request.body as { name: string }).name;
      await waitFor(
        () => seen.filter((e) => (e.data as { id: string }).id === name).length === 2,
        'both events published',
      );
      const mine = seen.filter((e) => (e.data as { id: string }).id === name);
      expect(mine.map((e) => e.type)).toEqual(['identity.created', 'identity.updated']);
      for (const e of mine) expect(e.meta).toEqual(expected);
      // The caller's token never travels in the meta.
      expect(JSON.stringify(mine)).not.toContain('secret-token-value');
    });

    it('background work carries no meta', async () => {
      const work = createUnitOfWork(s.database, relay, 'auth', (_tx, events) => events);
      const id = uniqueName('bg');
      await work((events) => events.emit(eventTypes.identityUpdated, identity(id)));
      await waitFor(() => seen.some((e) => (e.data as { id: string }).id === id), 'published');
      expect(seen.find((e) => (e.data as { id: string }).id === id)!.meta).toBeUndefined();
    });
  });
}
