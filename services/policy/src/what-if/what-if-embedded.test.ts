import { eventTypes, inventoryEventTypes } from '@ziti/contracts';
import {
  type Database,
  type EventHandler,
  createLogger,
  inEventTransaction,
  migrate,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFixture, routerFixture, serviceFixture } from '../../test/support.ts';
import { migrations } from '../app.ts';
import { policyEngineWiring } from '../policies/policy-engine.wiring.ts';
import {
  authReadModelSubscription,
  inventoryReadModelSubscription,
} from '../read-models/read-model-events.transport.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgIdentityServiceConfigsReadModel,
} from '../read-models/read-models.store.ts';
import { proposedChangesOf } from './what-if.mapper.ts';

/** Under `npm start` policy's database is PGlite: the sandbox (savepoint, rollback) works there too. */
let database: Database;
let engine: ReturnType<typeof policyEngineWiring>;

beforeAll(async () => {
  database = await openDatabase({ pgliteMemory: true });
  await migrate(database, migrations);
  engine = policyEngineWiring(database, undefined);
  const logger = createLogger('what-if-embedded', 'silent');
  const handlers = new Map<string, EventHandler>();
  for (const s of [
    authReadModelSubscription(engine.identities, engine.derive, logger),
    inventoryReadModelSubscription(
      {
        services: engine.services,
        edgeRouters: engine.edgeRouters,
        configs: (db) => new PgConfigReadModel(db),
        configTypes: (db) => new PgConfigTypeReadModel(db),
        overrides: (db) => new PgIdentityServiceConfigsReadModel(db),
        presence: engine.routerPresence,
      },
      engine.derive,
      logger,
    ),
  ])
    for (const h of s.handlers) handlers.set(h.type, h);
  let sequence = 0;
  const deliver = (type: string, source: string, data: { id: string }) =>
    inEventTransaction(database, 'policy', undefined, (tx, events) =>
      handlers
        .get(type)!
        .handle(
          tx,
          { id: `${source}:${++sequence}`, type, version: 1, source, sequence, occurredAt: '', data },
          events,
        ),
    );
  await deliver(eventTypes.identityCreated.type, 'auth', identityFixture('e-i1', ['dev']));
  await deliver(eventTypes.identityCreated.type, 'auth', identityFixture('e-i2', []));
  await deliver(inventoryEventTypes.serviceCreated.type, 'inventory', serviceFixture('e-s1', ['web']));
  await deliver(inventoryEventTypes.edgeRouterCreated.type, 'inventory', routerFixture('e-r1', ['edge']));
  await engine.policies.service.create({
    name: 'e-dial',
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: ['#dev'],
    serviceRoles: ['#web'],
  });
  await engine.policies.edgeRouter.create({
    name: 'e-erp',
    semantic: 'AnyOf',
    identityRoles: ['#all'],
    edgeRouterRoles: ['#all'],
  });
  await engine.policies.serviceEdgeRouter.create({
    name: 'e-serp',
    semantic: 'AnyOf',
    serviceRoles: ['#all'],
    edgeRouterRoles: ['#all'],
  });
}, 60_000);
afterAll(async () => database?.close());

describe('what-if on PGlite', () => {
  it('answers from the engine and rolls everything back', async () => {
    const state = async () =>
      queryRows(
        database.db,
        `select (select count(*)::int from outbox) as outbox, (select last from event_position) as position,
                (select array_agg(identity_id order by identity_id) from service_policy_identities) as links,
                (select role_attributes from identities where id = 'e-i2') as attributes`,
      );
    const before = await state();
    const answer = await engine.whatIf.analyse(
      proposedChangesOf([
        { action: 'patch', entityType: 'identities', id: 'e-i2', body: { roleAttributes: ['dev'] } },
        { action: 'delete', entityType: 'servicePolicies', id: (await engine.policies.service.list({})).items[0]!.id },
      ]),
      100,
    );
    expect(answer.services).toHaveLength(1);
    // e-i2 would gain Dial and lose it again with the policy; e-i1 loses it: the difference is e-i1's loss.
    expect(answer.services[0]!.dial).toEqual({
      gained: [],
      lost: [{ id: 'e-i1', name: 'n-e-i1' }],
      gainedCount: 0,
      lostCount: 1,
    });
    expect(answer.services[0]!.edgeRouters.identities).toEqual([
      { identity: { id: 'e-i1', name: 'n-e-i1' }, gained: [], lost: [{ id: 'e-r1', name: 'n-e-r1' }] },
    ]);
    expect(await state()).toEqual(before);
  });

  it('runs one at a time per process, eight more waiting; past them, 429', async () => {
    const { ApiError } = await import('@ziti/contracts');
    const one = () =>
      engine.whatIf.analyse(
        proposedChangesOf([
          { action: 'patch', entityType: 'identities', id: 'e-i2', body: { roleAttributes: ['dev'] } },
        ]),
        10,
      );
    const settled = await Promise.allSettled(Array.from({ length: 11 }, one));
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(9);
    const refused = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason] : []));
    expect(refused.map((r) => (r instanceof ApiError ? r.code : String(r)))).toEqual([
      'SERVER_TOO_MANY_REQUESTS',
      'SERVER_TOO_MANY_REQUESTS',
    ]);
    // And the queue drains: the next one is answered.
    await expect(one()).resolves.toMatchObject({ summary: { dialGained: 1 } });
  });
});
