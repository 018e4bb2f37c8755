import { type RouterPresenceState, routerPresenceEventTypes, routerPresenceState } from '@ziti/contracts';
import { type Database, createUnitOfWork, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../../test/support/prng.ts';
import { offlinePresenceFixture, policyBed, policyTestDatabase, presenceFixture } from '../../test/support.ts';
import { PgAccessLinks } from '../access/access-links.store.ts';
import { PolicyIntegrity } from '../maintenance/policy-integrity.domain.ts';
import { type OwnerPage, canonicalJson, reconcileReadModel } from './read-model-integrity.domain.ts';
import { PgRouterPresenceReadModel } from './read-models.store.ts';

/**
 * policy's read model of router presence on real Postgres: inventory's `routerPresence.changed`
 * applied by position whatever the order and however often it arrives, rebuilt from inventory's
 * `routerPresence` states on a resync, and checked by the integrity check — each time compared with
 * a computation from scratch (the state of the highest position per router).
 */
let database: Database;
let drop: () => Promise<void>;
let bed: ReturnType<typeof policyBed>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('presence', 4));
  bed = policyBed(database);
});
afterAll(async () => drop?.());

const def = routerPresenceEventTypes.routerPresenceChanged;
const model = () => new PgRouterPresenceReadModel(database.db);
const rebuild = () => bed.subscriptions[1]!.readModels!.find((m) => m.entity === 'routerPresence')!;
const parse = (raw: Record<string, unknown>) => {
  const r = routerPresenceState.safeParse(raw);
  return r.success ? r.data : null;
};

/** The live rows of a prefix: id → state (canonical JSON), and their `is_online` column. */
async function stored(prefix: string) {
  const rows = await queryRows<{ id: string; state: unknown; is_online: boolean }>(
    database.db,
    `select id, state, is_online from router_presence where not deleted and id like $1 order by id`,
    [`${prefix}%`],
  );
  for (const r of rows) expect(r.is_online, r.id).toBe((r.state as RouterPresenceState).isOnline);
  return Object.fromEntries(rows.map((r) => [r.id, canonicalJson(r.state)]));
}

/** From scratch: per router, the state of the highest position. */
function latest(events: { at: number; state: RouterPresenceState }[]) {
  const best = new Map<string, { at: number; state: RouterPresenceState }>();
  for (const e of events) if ((best.get(e.state.id)?.at ?? -1) < e.at) best.set(e.state.id, e);
  return Object.fromEntries(
    [...best].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, e]) => [id, canonicalJson(e.state)]),
  );
}

/** One router's successive presences: connects, synchronises, goes, comes back on another connection. */
function history(id: string, n: number, rnd: () => number): RouterPresenceState[] {
  return Array.from({ length: n }, (_, i) => {
    const at = `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z`;
    const connection = { connectionId: `conn-${id}-${Math.floor(i / 3)}`, changedAt: at };
    if (rnd() < 0.35) return offlinePresenceFixture(id, connection);
    return presenceFixture(id, {
      ...connection,
      syncStatus: rnd() < 0.5 ? 'SYNC_DONE' : 'SYNC_IN_PROGRESS',
      supportedProtocols: rnd() < 0.5 ? { tls: `tls://${id}.example:${3000 + i}` } : { wss: `wss://${id}.example:443` },
    });
  });
}

describe('router presence read model', () => {
  it('applies routerPresence.changed by position: redelivered, reordered and late events leave the newest state', async () => {
    const rnd = mulberry32(7);
    const events: { at: number; state: RouterPresenceState }[] = [];
    for (const id of ['ev-a', 'ev-b', 'ev-c', 'ev-d'])
      for (const state of history(id, 8, rnd)) events.push({ at: bed.nextPosition(), state });
    // Every event once or twice (a redelivery), in a shuffled order.
    const deliveries = events.flatMap((e) => (rnd() < 0.4 ? [e, e] : [e]));
    for (let i = deliveries.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [deliveries[i], deliveries[j]] = [deliveries[j]!, deliveries[i]!];
    }
    for (const e of deliveries) await bed.deliver(def, 'inventory', e.state, e.at);
    expect(await stored('ev-')).toEqual(latest(events));

    // An older state never rolls a router back; the same state at its position changes nothing.
    const newest = events.filter((e) => e.state.id === 'ev-a').at(-1)!;
    expect(await model().apply(presenceFixture('ev-a', { hostname: 'stale' }), newest.at - 1, false)).toBe(false);
    expect(await model().apply(newest.state, newest.at, false)).toBe(false);
    expect(await stored('ev-')).toEqual(latest(events));
  });

  it('is rebuilt from inventory’s states on a resync, racing later events, as a computation from scratch says', async () => {
    // Before: events up to some position, among them a router inventory no longer has.
    const before = [
      { at: bed.nextPosition(), state: presenceFixture('rb-1') },
      { at: bed.nextPosition(), state: presenceFixture('rb-2') },
      { at: bed.nextPosition(), state: offlinePresenceFixture('rb-gone') },
    ];
    for (const e of before) await bed.deliver(def, 'inventory', e.state, e.at);
    // inventory's states read at `position` (two pages); one event after it arrives before the rebuild.
    const position = bed.nextPosition();
    const page1 = [offlinePresenceFixture('rb-1'), presenceFixture('rb-2', { syncStatus: 'SYNC_IN_PROGRESS' })];
    const page2 = [presenceFixture('rb-3')];
    const after = { at: bed.nextPosition(), state: presenceFixture('rb-1', { connectionId: 'conn-rb-1-again' }) };
    await bed.deliver(def, 'inventory', after.state, after.at);
    const pages: OwnerPage[] = [
      { states: page1, position, upTo: 'rb-2' },
      { states: page2, position, after: 'rb-2' },
    ];
    for (const page of pages) await database.transaction((tx) => rebuild().applyPage(tx, page));

    // From scratch: the owner's states at `position`, then every event after it; rb-gone is gone.
    const scratch = latest([...[...page1, ...page2].map((state) => ({ at: position, state })), after]);
    expect(await stored('rb-')).toEqual(scratch);
    expect(Object.keys(scratch)).not.toContain('rb-gone');

    // The same pages again (a second resync) change nothing; the integrity check finds no drift.
    for (const page of pages) await database.transaction((tx) => rebuild().applyPage(tx, page));
    expect(await stored('rb-')).toEqual(scratch);
    const owner: OwnerPage = {
      states: [...page1, ...page2].map((s) => (s.id === 'rb-1' ? after.state : s)),
      position: after.at,
    };
    async function* ownerPages() {
      yield owner;
    }
    const drift = await reconcileReadModel({
      entity: 'router presence',
      model: model(),
      ownerPages: ownerPages(),
      parse,
      fix: false,
    });
    expect(drift.filter((r) => r.description.includes('rb-'))).toEqual([]);
  });

  it('is in the integrity check: drift against inventory’s states is found and fixed', async () => {
    await bed.deliver(def, 'inventory', presenceFixture('ic-1'));
    await bed.deliver(def, 'inventory', presenceFixture('ic-2'));
    // Planted drift at the stored position; ic-3 never arrived.
    await queryRows(
      database.db,
      `update router_presence set is_online = false, state = jsonb_set(state, '{isOnline}', 'false') where id = 'ic-2'`,
    );
    const position = bed.nextPosition();
    const owner: OwnerPage = {
      states: [presenceFixture('ic-1'), presenceFixture('ic-2'), presenceFixture('ic-3')],
      position,
    };
    const integrity = new PolicyIntegrity(
      {
        parkedEvents: async () => [],
        ownerPages: (_owner, type) =>
          (async function* () {
            if (type === 'routerPresence') yield owner;
          })(),
        readModels: {
          identities: bed.engine.identities(database.db),
          services: bed.engine.services(database.db),
          edgeRouters: bed.engine.edgeRouters(database.db),
          routerPresence: model(),
        },
        accessWork: createUnitOfWork(database, undefined, 'policy', (tx, events) => ({
          links: new PgAccessLinks(tx),
          events,
        })),
      },
      bed.engine.access,
    );
    const mine = (results: { description: string; fixed: boolean }[]) =>
      results.filter((r) => r.description.includes('router presence')).map((r) => [r.description, r.fixed]);
    // Every other row of the table is not in this owner's page: keep to this test's routers.
    await queryRows(database.db, `update router_presence set deleted = true where id not like 'ic-%'`);
    expect(mine(await integrity.check(false))).toEqual([
      ['read model: router presence ic-2 differs from its owner in isOnline', false],
      ['read model: router presence ic-3 is missing from the read model', false],
    ]);
    expect(mine(await integrity.check(true)).every(([, fixed]) => fixed)).toBe(true);
    expect(mine(await integrity.check(false))).toEqual([]);
    expect(await stored('ic-')).toEqual(
      latest(owner.states.map((state) => ({ at: position, state: state as RouterPresenceState }))),
    );
  });
});
