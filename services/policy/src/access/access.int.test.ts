import type { EdgeRouterState, IdentityState, ServiceState } from '@ziti/contracts';
import { identityFixture, policyTestDatabase, routerFixture, serviceFixture } from '../../test/support.ts';
import { type Database, type Db, type EventSink, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/infra.ts';
import { AccessDerivation } from './access.domain.ts';
import type { PolicyKind } from './access.ports.ts';
import { PgAccessLinks } from './access-links.store.ts';
import { applyOwnerState } from '../read-models/owner-state.domain.ts';
import { PgEdgeRouterReadModel, PgIdentityReadModel, PgServiceReadModel } from '../read-models/read-models.store.ts';

/**
 * Derived access (docs/adr/0009) on real Postgres: the semantics of roles, and convergence when
 * attribute changes and policy edits race in concurrent transactions.
 */
let database: Database;
let drop: () => Promise<void>;
const access = new AccessDerivation();
let position = 0;
/** Every event the derivations emitted, in emission order (derivations run under one lock). */
const emitted: { type: string; data: unknown }[] = [];
const events: EventSink = {
  emit: async (def, data) => {
    emitted.push({ type: def.type, data });
  },
};

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('acc'));
});
afterAll(async () => drop?.());

const identity = identityFixture;
const service = serviceFixture;
const router = routerFixture;

/**
 * What the consumers do for an event (read-models/owner-state.domain.ts): apply the state, derive
 * again if what access reads moved (a state that changes only its tags or envInfo derives nothing),
 * knowing whether the entity is new to policy (then nothing is captured before the relink).
 */
async function putIdentity(tx: Db, s: IdentityState, deleted = false) {
  await applyOwnerState(new PgIdentityReadModel(tx), s, ++position, deleted, (id, change) =>
    access.identityChanged(new PgAccessLinks(tx), events, id, change),
  );
}
/** A newer state of a live identity that changes only what access does not read (a login's client info, a tag). */
async function touchIdentity(tx: Db, id: string) {
  const current = await new PgIdentityReadModel(tx).current(id);
  if (current) await putIdentity(tx, { ...current.state, tags: { touched: Math.random() } });
}
async function putService(tx: Db, s: ServiceState, deleted = false) {
  await applyOwnerState(new PgServiceReadModel(tx), s, ++position, deleted, (id, change) =>
    access.serviceChanged(new PgAccessLinks(tx), events, id, change),
  );
}
async function putRouter(tx: Db, s: EdgeRouterState) {
  if (await new PgEdgeRouterReadModel(tx).apply(s, ++position, false))
    await access.edgeRouterChanged(new PgAccessLinks(tx), s.id);
}

const tables: Record<PolicyKind, { table: string; a: string; b: string }> = {
  service: { table: 'service_policies', a: 'identity_roles', b: 'service_roles' },
  edgeRouter: { table: 'edge_router_policies', a: 'identity_roles', b: 'edge_router_roles' },
  serviceEdgeRouter: { table: 'service_edge_router_policies', a: 'service_roles', b: 'edge_router_roles' },
};

/** What the policy operations do: write the policy row, derive again for it. */
async function putPolicy(
  tx: Db,
  kind: PolicyKind,
  p:
    | { id: string; semantic?: 'AllOf' | 'AnyOf'; type?: 'Dial' | 'Bind'; a: string[]; b: string[] }
    | { id: string; deleted: true },
) {
  const t = tables[kind];
  // Policy ids repeat in the race and name = id: two first inserts of one id would collide on the
  // name index (not the upsert's arbiter). The derivation lock orders them, as it orders the rest.
  await new PgAccessLinks(tx).lock();
  if ('deleted' in p) {
    await queryRows(tx, `delete from ${t.table} where id = $1`, [p.id]);
  } else {
    const typeCol = kind === 'service' ? ', type' : '';
    const typeVal = kind === 'service' ? `, '${p.type ?? 'Dial'}'` : '';
    await queryRows(
      tx,
      `insert into ${t.table} (id, name, semantic, ${t.a}, ${t.b}${typeCol}, created_at, updated_at)
       values ($1, $1, $2, $3, $4${typeVal}, now(), now())
       on conflict (id) do update set semantic = excluded.semantic, ${t.a} = excluded.${t.a}, ${t.b} = excluded.${t.b}`,
      [p.id, p.semantic ?? 'AnyOf', [...p.a].sort(), [...p.b].sort()],
    );
  }
  await access.policyChanged(new PgAccessLinks(tx), events, kind, p.id);
}

const rows = async (sql: string, params: unknown[] = []) =>
  queryRows<Record<string, unknown>>(database.db, sql, params);
const differences = () => database.transaction((tx) => new PgAccessLinks(tx).differences());

describe('derived access', () => {
  it('follows AnyOf, AllOf, @id and #all, for services and edge routers', async () => {
    await database.transaction(async (tx) => {
      await putIdentity(tx, identity('sem-a', ['eng', 'ops']));
      await putIdentity(tx, identity('sem-b', ['eng']));
      await putIdentity(tx, identity('sem-c', []));
      await putService(tx, service('sem-s1', ['web']));
      await putService(tx, service('sem-s2', ['db']));
      await putRouter(tx, router('sem-r1', ['edge']));
      await putRouter(tx, router('sem-r2', []));
      // Dial: identities with eng AND ops → web services. Bind: @sem-c or any of eng → @sem-s2.
      await putPolicy(tx, 'service', {
        id: 'sem-p1',
        semantic: 'AllOf',
        type: 'Dial',
        a: ['#eng', '#ops'],
        b: ['#web'],
      });
      await putPolicy(tx, 'service', {
        id: 'sem-p2',
        semantic: 'AnyOf',
        type: 'Bind',
        a: ['#eng', '@sem-c'],
        b: ['@sem-s2'],
      });
      await putPolicy(tx, 'service', { id: 'sem-p3', type: 'Dial', a: ['@sem-a'], b: ['@sem-s2'] });
      await putPolicy(tx, 'edgeRouter', { id: 'sem-e1', a: ['#all'], b: ['#edge'] });
      await putPolicy(tx, 'serviceEdgeRouter', { id: 'sem-x1', a: ['#web'], b: ['#all'] });
    });
    const services = await rows(
      "select identity_id, service_id, dial, bind from identity_services where identity_id like 'sem-%' order by 1, 2",
    );
    expect(services).toEqual([
      { identity_id: 'sem-a', service_id: 'sem-s1', dial: true, bind: false },
      { identity_id: 'sem-a', service_id: 'sem-s2', dial: true, bind: true },
      { identity_id: 'sem-b', service_id: 'sem-s2', dial: false, bind: true },
      { identity_id: 'sem-c', service_id: 'sem-s2', dial: false, bind: true },
    ]);
    const routers = await rows(
      "select identity_id, edge_router_id from identity_edge_routers where identity_id like 'sem-%' order by 1, 2",
    );
    expect(routers).toEqual(['sem-a', 'sem-b', 'sem-c'].map((i) => ({ identity_id: i, edge_router_id: 'sem-r1' })));
    expect(
      await rows(
        "select service_id, edge_router_id from service_edge_routers where service_id like 'sem-%' order by 1, 2",
      ),
    ).toEqual([
      { service_id: 'sem-s1', edge_router_id: 'sem-r1' },
      { service_id: 'sem-s1', edge_router_id: 'sem-r2' },
    ]);
    // Losing an attribute, a policy or a service loses the access.
    await database.transaction(async (tx) => {
      await putIdentity(tx, identity('sem-a', ['eng']));
      await putPolicy(tx, 'service', { id: 'sem-p2', deleted: true });
      await putService(tx, service('sem-s1', ['web']), true);
    });
    expect(
      await rows(
        "select identity_id, service_id, dial, bind from identity_services where identity_id like 'sem-%' order by 1, 2",
      ),
    ).toEqual([{ identity_id: 'sem-a', service_id: 'sem-s2', dial: true, bind: false }]);
    expect(await rows("select * from service_edge_routers where service_id like 'sem-%'")).toEqual([]);
    expect(await differences()).toEqual([]);
  });

  it('converges whatever the interleaving of attribute changes and policy edits (races, then a computation from scratch)', async () => {
    const attrs = ['a', 'b', 'c', 'd'];
    const pick = () => attrs.filter(() => Math.random() < 0.5);
    const roles = () => {
      const r = Math.random();
      if (r < 0.1) return ['#all'];
      const out = pick().map((x) => `#${x}`);
      if (r < 0.3) out.push(`@race-i${Math.floor(Math.random() * 30)}`);
      return out;
    };
    await database.transaction(async (tx) => {
      for (let i = 0; i < 30; i++) await putIdentity(tx, identity(`race-i${i}`, pick()));
      for (let i = 0; i < 15; i++) await putService(tx, service(`race-s${i}`, pick()));
      for (let i = 0; i < 8; i++) await putRouter(tx, router(`race-r${i}`, pick()));
    });
    const kinds: PolicyKind[] = ['service', 'edgeRouter', 'serviceEdgeRouter'];
    let created = 0;
    const change = async () => {
      const r = Math.random();
      await database.transaction(async (tx) => {
        // New to policy while the policies move: their access is announced without a capture.
        if (r < 0.05) await putIdentity(tx, identity(`race-new-i${created++}`, pick()));
        else if (r < 0.08) await putService(tx, service(`race-new-s${created++}`, pick()));
        else if (r < 0.1) await touchIdentity(tx, `race-i${Math.floor(Math.random() * 30)}`);
        else if (r < 0.35) await putIdentity(tx, identity(`race-i${Math.floor(Math.random() * 30)}`, pick()));
        else if (r < 0.5)
          await putService(tx, service(`race-s${Math.floor(Math.random() * 15)}`, pick()), Math.random() < 0.1);
        else if (r < 0.6) await putRouter(tx, router(`race-r${Math.floor(Math.random() * 8)}`, pick()));
        else {
          const kind = kinds[Math.floor(Math.random() * kinds.length)]!;
          const id = `race-${kind}-${Math.floor(Math.random() * 6)}`;
          if (Math.random() < 0.15) await putPolicy(tx, kind, { id, deleted: true });
          else
            await putPolicy(tx, kind, {
              id,
              semantic: Math.random() < 0.5 ? 'AllOf' : 'AnyOf',
              type: Math.random() < 0.5 ? 'Dial' : 'Bind',
              a: roles(),
              b:
                kind === 'serviceEdgeRouter'
                  ? pick().map((x) => `#${x}`)
                  : roles().map((x) => x.replace('@race-i', '@race-s')),
            });
        }
      });
    };
    let left = 400;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (left-- > 0) await change();
      }),
    );
    expect(await differences()).toEqual([]);
    const [count] = await rows("select count(*)::int as n from identity_services where identity_id like 'race-%'");
    expect(Number(count!.n)).toBeGreaterThan(0);
    // The access events, replayed in order from nothing, give exactly the derived table.
    const replayed = new Map<string, string>();
    for (const e of emitted) {
      if (e.type !== 'identityAccess.changed') continue;
      const d = e.data as { identityId: string; services: { serviceId: string; dial: boolean; bind: boolean }[] };
      for (const x of d.services) {
        const key = `${d.identityId} ${x.serviceId}`;
        if (x.dial || x.bind) replayed.set(key, `${x.dial} ${x.bind}`);
        else replayed.delete(key);
      }
    }
    const table = await rows('select identity_id, service_id, dial, bind from identity_services');
    const derived = new Map(table.map((r) => [`${r.identity_id} ${r.service_id}`, `${r.dial} ${r.bind}`]));
    expect(emitted.some((e) => e.type === 'identityAccess.bulkChanged')).toBe(false);
    expect(new Map([...replayed].sort())).toEqual(new Map([...derived].sort()));
    // The race's policies (some `#all`) would select what later tests create: they go.
    await database.transaction(async (tx) => {
      for (const kind of kinds)
        for (let i = 0; i < 6; i++) await putPolicy(tx, kind, { id: `race-${kind}-${i}`, deleted: true });
    });
  });

  it("an update that races its entity's create still announces the access the create gave, and its loss", async () => {
    await database.transaction(async (tx) => {
      await putService(tx, service('late-s1', ['late-one']));
      await putService(tx, service('late-s2', ['late-two']));
      await putPolicy(tx, 'service', { id: 'late-p1', type: 'Dial', a: ['#late-one'], b: ['#late-one'] });
      await putPolicy(tx, 'service', { id: 'late-p2', type: 'Dial', a: ['#late-two'], b: ['#late-two'] });
    });
    const before = emitted.length;
    // The create holds its transaction open; the update (a later position) starts meanwhile and
    // waits on the created row, its statement's snapshot taken before the create committed.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let created!: () => void;
    const inserted = new Promise<void>((r) => (created = r));
    const create = database.transaction(async (tx) => {
      await putIdentity(tx, identity('late-i', ['late-one']));
      created();
      await held;
    });
    await inserted;
    const update = database.transaction((tx) => putIdentity(tx, identity('late-i', ['late-two'])));
    await waitFor(
      async () => {
        const [w] = await rows(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
        );
        return Number(w!.n) > 0 || undefined;
      },
      'the update waiting on the created row',
      10_000,
      10,
    );
    release();
    await Promise.all([create, update]);
    const announced = emitted
      .slice(before)
      .filter((e) => e.type === 'identityAccess.changed')
      .flatMap((e) => (e.data as { services: { serviceId: string; dial: boolean }[] }).services);
    expect(announced).toEqual([
      { serviceId: 'late-s1', dial: true, bind: false },
      { serviceId: 'late-s1', dial: false, bind: false },
      { serviceId: 'late-s2', dial: true, bind: false },
    ]);
    expect(await rows("select service_id from identity_services where identity_id = 'late-i'")).toEqual([
      { service_id: 'late-s2' },
    ]);
    expect(await differences()).toEqual([]);
  });

  it('the integrity check finds drifted links and the fix rebuilds them from scratch, announcing whose access moved', async () => {
    await queryRows(database.db, "delete from service_policy_identities where identity_id = 'sem-a'");
    await queryRows(database.db, "insert into edge_router_policy_edge_routers values ('sem-e1', 'ghost')");
    expect(await rows("select service_id from identity_services where identity_id = 'sem-a' order by 1")).toEqual([]);
    const check = await database.transaction((tx) => access.check(new PgAccessLinks(tx), events, false));
    const described = check.map((r) => r.description).join('\n');
    expect(described).toMatch(/service_policy_identities: [1-9]\d* row\(s\) missing and 0 extra/);
    expect(described).toMatch(/edge_router_policy_edge_routers: 0 row\(s\) missing and 1 extra/);
    const before = emitted.length;
    const fix = await database.transaction((tx) => access.check(new PgAccessLinks(tx), events, true));
    expect(fix.every((r) => r.fixed)).toBe(true);
    expect(await differences()).toEqual([]);
    expect(await rows("select service_id from identity_services where identity_id = 'sem-a' order by 1")).toEqual([
      { service_id: 'sem-s2' },
    ]);
    const bulk = emitted.slice(before).filter((e) => e.type === 'identityAccess.bulkChanged');
    expect(bulk.flatMap((e) => (e.data as { identityIds: string[] }).identityIds)).toContain('sem-a');
  });

  it('a policy over more pairs than are compared one by one relinks at once and announces its identities in bulk', async () => {
    const n = 600; // 600 identities × 500 services = 300,000 pairs > exactAccessPairLimit
    await database.transaction(async (tx) => {
      await queryRows(
        tx,
        `insert into identities (id, name, type_id, is_admin, role_attributes, state, source_sequence)
           select 'wide-i' || g, 'wide-i' || g, 'Default', false, '{wide}', '{}'::jsonb, 1 from generate_series(1, $1) g`,
        [n],
      );
      await queryRows(
        tx,
        `insert into services (id, name, role_attributes, state, source_sequence)
           select 'wide-s' || g, 'wide-s' || g, '{wide}', '{}'::jsonb, 1 from generate_series(1, 500) g`,
      );
      // Written straight into the read models: link them to the policies there are (no new access).
      const links = new PgAccessLinks(tx);
      await links.lock();
      await links.rebuildAll();
    });
    const before = emitted.length;
    await database.transaction((tx) => putPolicy(tx, 'service', { id: 'wide-p', a: ['#wide'], b: ['#wide'] }));
    const [count] = await rows("select count(*)::int as n from identity_services where identity_id like 'wide-%'");
    expect(count!.n).toBe(n * 500);
    const bulk = emitted.slice(before).filter((e) => e.type === 'identityAccess.bulkChanged');
    expect(bulk).toHaveLength(1);
    expect(bulk[0]!.data).toMatchObject({ pairs: n * 500, policyId: 'wide-p' });
    expect((bulk[0]!.data as { identityIds: string[] }).identityIds).toHaveLength(n);
    expect(emitted.slice(before).some((e) => e.type === 'identityAccess.changed')).toBe(false);
    expect(await differences()).toEqual([]);
  });
});
