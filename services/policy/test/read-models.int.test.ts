import type { EdgeRouterState, ServiceState } from '@ziti/contracts';
import { serviceState } from '@ziti/contracts';
import { type Database, migrate, openDatabase } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import { canonicalJson, reconcileReadModel } from '../src/domain/read-model-integrity.ts';
import { PgEdgeRouterReadModel, PgServiceReadModel } from '../src/store/pg-identity-read-model.ts';

let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  const db = await createTestDatabase('pol');
  database = await openDatabase({ url: db.url, poolSize: 4 });
  await migrate(database, migrations);
  drop = async () => {
    await database.close();
    await db.drop();
  };
});
afterAll(async () => {
  await drop?.();
});

const service = (id: string, over: Partial<ServiceState> = {}): ServiceState => ({
  id,
  name: `svc-${id}`,
  terminatorStrategy: 'smartrouting',
  roleAttributes: [],
  configs: [],
  encryptionRequired: true,
  maxIdleTimeMillis: 0,
  tags: {},
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...over,
});

async function* pages<T>(...list: T[][]): AsyncGenerator<Record<string, unknown>[]> {
  for (const p of list) yield p as Record<string, unknown>[];
}

describe('service and edge router read models', () => {
  it('apply only newer events; deletions leave tombstones that older events can not undo', async () => {
    const model = new PgServiceReadModel(database.db);
    expect(await model.apply(service('s1', { roleAttributes: ['a'] }), 10, false)).toBe(true);
    expect(await model.apply(service('s1', { roleAttributes: ['old'] }), 5, false)).toBe(false);
    expect(await model.apply(service('s1', { roleAttributes: ['a', 'b'] }), 11, false)).toBe(true);
    expect((await model.roleAttributes({})).items).toEqual(['a', 'b']);
    expect((await model.roleAttributes({ filter: 'id contains "b"' })).items).toEqual(['b']);
    expect(await model.apply(service('s1'), 12, true)).toBe(true);
    expect(await model.apply(service('s1', { roleAttributes: ['zombie'] }), 11, false)).toBe(false);
    expect((await model.roleAttributes({})).items).toEqual([]);
    expect(await model.liveRows(undefined, undefined, 10)).toEqual([]);
  });

  it('edge routers keep their role attributes apart from services', async () => {
    const routers = new PgEdgeRouterReadModel(database.db);
    const state: EdgeRouterState = {
      id: 'r1',
      name: 'er1',
      roleAttributes: ['public'],
      isTunnelerEnabled: true,
      isVerified: false,
      disabled: false,
      noTraversal: false,
      cost: 0,
      fingerprint: null,
      appData: {},
      tags: {},
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    await routers.apply(state, 1, false);
    expect((await routers.roleAttributes({})).items).toEqual(['public']);
    expect((await new PgServiceReadModel(database.db).roleAttributes({})).items).not.toContain('public');
  });
});

describe('reconciling a read model with its owner', () => {
  it('finds missing, differing and orphaned entities across owner pages, and repairs them when fixing', async () => {
    const model = new PgServiceReadModel(database.db);
    // Read model: b (stale name), c (owner lost it), e (fine), x (after the owner's last id: orphan).
    await model.apply(service('b', { name: 'old-b' }), 100, false);
    await model.apply(service('c'), 100, false);
    await model.apply(service('e'), 100, false);
    await model.apply(service('x'), 100, false);
    const owner = [
      [service('a'), service('b')],
      [service('d'), service('e')],
    ];
    const parse = (raw: Record<string, unknown>) => serviceState.parse(raw);

    const check = await reconcileReadModel({
      entity: 'service',
      model,
      ownerPages: pages(...owner),
      parse,
      fix: false,
    });
    expect(check.map((r) => [r.description, r.fixed])).toEqual([
      ['service b (svc-b) differs from its owner in name', false],
      ['service a (svc-a) is missing from the read model', false],
      ['service c (svc-c) is in the read model but its owner no longer has it', false],
      ['service d (svc-d) is missing from the read model', false],
      ['service x (svc-x) is in the read model but its owner no longer has it', false],
    ]);

    const fix = await reconcileReadModel({ entity: 'service', model, ownerPages: pages(...owner), parse, fix: true });
    expect(fix.every((r) => r.fixed)).toBe(true);
    const live = await model.liveRows(undefined, undefined, 100);
    expect(live.map((r) => r.id)).toEqual(['a', 'b', 'd', 'e']);
    expect(live.find((r) => r.id === 'b')!.state.name).toBe('svc-b');
    expect(
      await reconcileReadModel({ entity: 'service', model, ownerPages: pages(...owner), parse, fix: false }),
    ).toEqual([]);

    // A repaired row still moves on with the owner's next events.
    expect(await model.apply(service('a', { name: 'a2' }), 1, false)).toBe(true);
  });

  it('compares states by content, not key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }),
    );
  });
});
