import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
import { serviceState } from '@ziti/contracts';
import { type Database, migrate, openDatabase } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { identityFixture } from '../../test/support.ts';
import { migrations } from '../app.ts';
import { type OwnerPage, applyOwnerPage, canonicalJson, reconcileReadModel } from './read-model-integrity.domain.ts';
import { PgEdgeRouterReadModel, PgIdentityReadModel, PgServiceReadModel } from './read-models.store.ts';

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

/** The owner's pages as `ownerEntityStates` yields them: read at `position`, each covering (after, upTo]. */
async function* pagesAt<T extends { id: string }>(position: number, ...list: T[][]): AsyncGenerator<OwnerPage> {
  let after: string | undefined;
  for (const [i, p] of list.entries()) {
    const upTo = i < list.length - 1 ? p[p.length - 1]!.id : undefined;
    yield {
      states: p as unknown as Record<string, unknown>[],
      position,
      ...(after === undefined ? {} : { after }),
      ...(upTo === undefined ? {} : { upTo }),
    };
    after = upTo;
  }
}
const pages = <T extends { id: string }>(...list: T[][]) => pagesAt(200, ...list);

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
      hostname: 'er1.example',
      supportedProtocols: { tls: 'tls://er1.example:3022' },
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
      // The last page covers everything after the previous one, x included.
      ['service x (svc-x) is in the read model but its owner no longer has it', false],
      ['service d (svc-d) is missing from the read model', false],
    ]);

    const fix = await reconcileReadModel({ entity: 'service', model, ownerPages: pages(...owner), parse, fix: true });
    expect(fix.every((r) => r.fixed)).toBe(true);
    const live = await model.liveRows(undefined, undefined, 100);
    expect(live.map((r) => r.id)).toEqual(['a', 'b', 'd', 'e']);
    expect(live.find((r) => r.id === 'b')!.state.name).toBe('svc-b');
    expect(
      await reconcileReadModel({ entity: 'service', model, ownerPages: pages(...owner), parse, fix: false }),
    ).toEqual([]);

    // A repaired row still moves on with the owner's next events, and an older one changes nothing.
    expect(await model.apply(service('a', { name: 'a-old' }), 150, false)).toBe(false);
    expect(await model.apply(service('a', { name: 'a2' }), 201, false)).toBe(true);
  });

  it('a stale fix racing a newer event never rolls the read model back', async () => {
    const model = new PgServiceReadModel(database.db);
    const parse = (raw: Record<string, unknown>) => serviceState.parse(raw);
    for (let round = 0; round < 20; round++) {
      const id = `race-${round}`;
      await model.apply(service(id, { name: 'v1' }), 1000 + round * 10, false);
      // The owner's page is read at position p (name v2); the event of a later change (p + 1,
      // name v3, or a deletion) lands before or after the fix, in either order.
      const p = 1000 + round * 10 + 5;
      const page = pagesAt(p, [service(id, { name: 'v2' })]);
      const later =
        round % 2 === 0
          ? model.apply(service(id, { name: 'v3' }), p + 1, false)
          : model.apply(service(id), p + 1, true);
      const fix = reconcileReadModel({ entity: 'service', model, ownerPages: page, parse, fix: true });
      await Promise.all(round % 3 === 0 ? [fix, later] : [later, fix]);
      const live = (await model.liveRows(undefined, undefined, 1000)).filter((r) => r.id === id);
      if (round % 2 === 0) expect(live.map((r) => r.state.name)).toEqual(['v3']);
      else expect(live).toEqual([]);
      expect(await model.positionOf(id)).toBe(p + 1);
    }
  });

  it('a resync page tombstones what the owner lacks, but not what was created after the page', async () => {
    const model = new PgServiceReadModel(database.db);
    await model.apply(service('page-gone'), 10, false);
    await model.apply(service('page-new'), 60, false);
    await applyOwnerPage(model, { states: [service('page-kept')], position: 50, after: 'page-', upTo: 'page-~' }, (r) =>
      serviceState.parse(r),
    );
    const live = (await model.liveRows('page-', 'page-~', 10)).map((r) => r.id);
    expect(live).toEqual(['page-kept', 'page-new']);
    expect(await model.positionOf('page-gone')).toBe(50);
  });

  it('compares states by content, not key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(
      canonicalJson({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }),
    );
  });
});

describe('what an applied state asks to derive again', () => {
  const identity = (id: string, over: Partial<IdentityState> = {}): IdentityState => ({
    ...identityFixture(id, ['a']),
    ...over,
  });

  it("an identity's state that leaves its attributes, admin flag, name and type as they were derives nothing", async () => {
    const model = new PgIdentityReadModel(database.db);
    expect(await model.applyState(identity('d1'), 1, false)).toEqual({ derive: true, fresh: true });
    // A login (its updatedAt) or a tag: stored, nothing to derive.
    expect(await model.applyState(identity('d1', { updatedAt: '2026-01-02T00:00:00.000Z' }), 2, false)).toEqual({
      derive: false,
      fresh: false,
    });
    expect(await model.applyState(identity('d1', { tags: { x: 1 } }), 3, false)).toEqual({
      derive: false,
      fresh: false,
    });
    expect((await model.current('d1'))?.state.tags).toEqual({ x: 1 });
    expect(await model.applyState(identity('d1', { roleAttributes: ['b'] }), 4, false)).toEqual({
      derive: true,
      fresh: false,
    });
    expect(await model.applyState(identity('d1', { roleAttributes: ['b'], isAdmin: true }), 5, false)).toEqual({
      derive: true,
      fresh: false,
    });
    expect(await model.applyState(identity('d1', { roleAttributes: ['b'], isAdmin: true }), 6, true)).toEqual({
      derive: true,
      fresh: false,
    });
    // An older state is not applied at all.
    expect(await model.applyState(identity('d1', { roleAttributes: ['c'] }), 4, false)).toBe(false);
  });

  it('a service derives again on every applied state (its configs and name are in the views)', async () => {
    const model = new PgServiceReadModel(database.db);
    expect(await model.applyState(service('d2'), 1, false)).toEqual({ derive: true, fresh: true });
    expect(await model.applyState(service('d2', { tags: { x: 1 } }), 2, false)).toEqual({ derive: true, fresh: false });
  });
});
