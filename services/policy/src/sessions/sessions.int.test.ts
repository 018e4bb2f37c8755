import { type Database, type EventSink, migrate, openDatabase, queryRows } from '@ziti/platform';
import { migrations } from '../app.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessDerivation } from '../access/access.domain.ts';
import type { ApiSessionStart } from '../api-sessions/api-sessions.domain.ts';
import { type Session, type SessionType, decideCreation } from './sessions.domain.ts';
import { PgAccessLinks } from '../access/access-links.store.ts';
import { PgEdgeRouterReadModel, PgIdentityReadModel, PgServiceReadModel } from '../read-models/read-models.store.ts';
import { SessionCreationBatcher } from './session-creation-batcher.store.ts';
import { PgApiSessions } from '../api-sessions/api-sessions.store.ts';
import { PgSessions } from './sessions.store.ts';
import { identityFixture, policyTestDatabase, routerFixture, serviceFixture } from '../../test/support.ts';

/**
 * Edge sessions end with their API session whatever the interleaving: a creation racing the end of
 * its API session either comes first (and the end removes it) or is refused; none survives.
 */
let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('sess'));
});
afterAll(async () => drop?.());

const session = (apiSessionId: string, serviceId = 'svc'): Session => ({
  id: `s-${apiSessionId}-${serviceId}`,
  token: `t-${apiSessionId}-${serviceId}`,
  apiSessionId,
  identityId: 'i1',
  serviceId,
  type: 'Dial',
  tags: {},
  createdAt: new Date(),
  updatedAt: new Date(),
});
const count = async (apiSessionId: string) =>
  Number(
    (
      await queryRows<{ n: number }>(database.db, 'select count(*)::int as n from sessions where api_session_id = $1', [
        apiSessionId,
      ])
    )[0]!.n,
  );

/** auth's `apiSession.created` of a password login, as policy's consumer applies it. */
const apiSessionStart = (id: string, identityId: string): ApiSessionStart => ({
  id,
  identityId,
  authMethod: 'password',
  isMfaRequired: false,
  isMfaComplete: false,
  configTypes: [],
  createdAt: new Date().toISOString(),
});

/** Applies `apiSessionStart(id, identityId)` as policy's consumer does. */
const started = (id: string, identityId = 'ci') =>
  database.transaction((tx) => new PgApiSessions(tx).started(apiSessionStart(id, identityId)));

describe('sessions and their API session', () => {
  it('refuses a session for an ended API session and answers the existing one for a repeat', async () => {
    const sessions = new PgSessions(database.db);
    const first = await sessions.createIfLive(session('a1'));
    expect(first).toMatchObject({ id: 's-a1-svc' });
    const again = await sessions.createIfLive({ ...session('a1'), id: 'other', token: 'other' });
    expect(again).toMatchObject({ id: 's-a1-svc', token: 't-a1-svc' });
    await database.transaction((tx) => new PgApiSessions(tx).ended('a1', 'i1', new Date().toISOString()));
    expect(await count('a1')).toBe(0);
    expect(await sessions.createIfLive(session('a1', 'svc2'))).toBe('ended');
    // A late start never reopens it.
    await started('a1', 'i1');
    expect(await sessions.createIfLive(session('a1', 'svc3'))).toBe('ended');
  });

  it('a creation racing the end of its API session never leaves a session behind (200 races)', async () => {
    const sessions = new PgSessions(database.db);
    for (let i = 0; i < 200; i++) {
      const id = `race-${i}`;
      await Promise.all([
        sessions.createIfLive(session(id)),
        database.transaction((tx) => new PgApiSessions(tx).ended(id, 'i1', new Date().toISOString())),
        sessions.createIfLive(session(id, 'svc2')),
      ]);
      expect(await count(id), id).toBe(0);
    }
  });
});

/**
 * A creation as the domain makes it over the store: its facts, the decision on them, and the insert
 * when that is the decision (a posture check is not evaluated here: nothing is inserted then).
 */
async function createIfClear(
  sessions: PgSessions,
  viewer: { identityId: string; isAdmin: boolean },
  serviceId: string,
  reuse: { apiSessionId: string; type: SessionType },
  routerLimit: number,
  candidate: Session,
) {
  const context = await sessions.creationFacts(viewer, serviceId, reuse, routerLimit);
  if (!context) return {};
  const decision = decideCreation(context, reuse.type, 'unknown');
  return decision.outcome === 'insert' ? { context, created: await sessions.createIfLive(candidate) } : { context };
}

describe('creation: the facts in one statement, the insert in another (grouped under load)', () => {
  const access = new AccessDerivation();
  const events: EventSink = { emit: async () => undefined };
  const viewer = { identityId: 'ci', isAdmin: false };
  const svc = (id: string) => serviceFixture(id, ['clear']);
  const router = routerFixture('cr', ['clear']);
  const candidate = (apiSessionId: string, serviceId: string, n = 0): Session => ({
    ...session(apiSessionId, serviceId),
    id: `c-${apiSessionId}-${serviceId}-${n}`,
    token: `ct-${apiSessionId}-${serviceId}-${n}`,
    identityId: 'ci',
  });
  const reuse = (apiSessionId: string) => ({ apiSessionId, type: 'Dial' as const });

  beforeAll(() => seed(database));

  /** ci may dial every #clear service; every #clear service but c-norouter shares router cr with ci. */
  async function seed(database: Database) {
    await database.transaction(async (tx) => {
      let position = 0;
      await new PgIdentityReadModel(tx).apply(identityFixture('ci', ['clear']), ++position, false);
      for (const id of ['c-s1', 'c-s2', 'c-posture', 'c-norouter'])
        await new PgServiceReadModel(tx).apply(svc(id), ++position, false);
      await new PgEdgeRouterReadModel(tx).apply(router, ++position, false);
      await queryRows(
        tx,
        `insert into service_policies (id, name, semantic, identity_roles, service_roles, type, posture_check_roles, created_at, updated_at)
         values ('cp-dial', 'cp-dial', 'AnyOf', '{#clear}', '{@c-s1,@c-s2,@c-norouter}', 'Dial', '{}', now(), now()),
                ('cp-posture', 'cp-posture', 'AnyOf', '{#clear}', '{@c-posture}', 'Dial', '{#mfa}', now(), now())`,
      );
      await queryRows(
        tx,
        `insert into edge_router_policies (id, name, semantic, identity_roles, edge_router_roles, created_at, updated_at)
         values ('cp-erp', 'cp-erp', 'AnyOf', '{#clear}', '{@cr}', now(), now())`,
      );
      await queryRows(
        tx,
        `insert into service_edge_router_policies (id, name, semantic, service_roles, edge_router_roles, created_at, updated_at)
         values ('cp-serp', 'cp-serp', 'AnyOf', '{@c-s1,@c-s2,@c-posture}', '{@cr}', now(), now())`,
      );
      await queryRows(
        tx,
        `insert into posture_checks (id, name, type_id, role_attributes, data, created_at, updated_at)
         values ('c-mfa', 'c-mfa', 'MFA', '{mfa}', '{}'::jsonb, now(), now())`,
      );
      await access.identityChanged(new PgAccessLinks(tx), events, 'ci');
      for (const id of ['cp-dial', 'cp-posture'])
        await access.policyChanged(new PgAccessLinks(tx), events, 'service', id);
      await access.policyChanged(new PgAccessLinks(tx), events, 'edgeRouter', 'cp-erp');
      await access.policyChanged(new PgAccessLinks(tx), events, 'serviceEdgeRouter', 'cp-serp');
    });
  }

  it('inserts when nothing stands in the way, and answers the existing session afterwards', async () => {
    const sessions = new PgSessions(database.db);
    const first = await createIfClear(sessions, viewer, 'c-s1', reuse('ca1'), 25, candidate('ca1', 'c-s1'));
    expect(first.created).toMatchObject({ id: 'c-ca1-c-s1-0', identityId: 'ci', serviceId: 'c-s1' });
    expect(first.context?.edgeRouters.map((r) => r.id)).toEqual(['cr']);
    const again = await createIfClear(sessions, viewer, 'c-s1', reuse('ca1'), 25, candidate('ca1', 'c-s1', 1));
    expect(again.created).toBeUndefined();
    expect(again.context?.existing?.id).toBe('c-ca1-c-s1-0');
  });

  it('inserts nothing when a posture check applies, no router is shared or the service is not visible', async () => {
    const sessions = new PgSessions(database.db);
    const posture = await createIfClear(sessions, viewer, 'c-posture', reuse('ca2'), 25, candidate('ca2', 'c-posture'));
    expect(posture).toMatchObject({ context: { postureChecked: true } });
    expect(posture.created).toBeUndefined();
    const noRouter = await createIfClear(
      sessions,
      viewer,
      'c-norouter',
      reuse('ca2'),
      25,
      candidate('ca2', 'c-norouter'),
    );
    expect(noRouter.context?.edgeRouters).toEqual([]);
    expect(noRouter.created).toBeUndefined();
    const stranger = { identityId: 'nobody', isAdmin: false };
    expect(await createIfClear(sessions, stranger, 'c-s1', reuse('ca2'), 25, candidate('ca2', 'c-s1'))).toEqual({});
    expect(await count('ca2')).toBe(0);
  });

  it('50 concurrent creations of one pair make one session, and every one answers it', async () => {
    const sessions = new PgSessions(database.db);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        createIfClear(sessions, viewer, 'c-s2', reuse('ca3'), 25, candidate('ca3', 'c-s2', n)),
      ),
    );
    const ids = new Set(answers.map((a) => (a.created as Session | undefined)?.id ?? a.context?.existing?.id));
    expect(ids.has(undefined)).toBe(false);
    expect(ids.size).toBe(1);
    expect(await count('ca3')).toBe(1);
  });

  it('50 concurrent creations for a known API session (locked for share) make one session per pair', async () => {
    const sessions = new PgSessions(database.db);
    await started('ca5');
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        createIfClear(
          sessions,
          viewer,
          n % 2 ? 'c-s1' : 'c-s2',
          reuse('ca5'),
          25,
          candidate('ca5', n % 2 ? 'c-s1' : 'c-s2', n),
        ),
      ),
    );
    const ids = new Set(answers.map((a) => (a.created as Session | undefined)?.id ?? a.context?.existing?.id));
    expect(ids.has(undefined)).toBe(false);
    expect(ids.size).toBe(2);
    expect(await count('ca5')).toBe(2);
  });

  it('refuses a creation for an ended API session, and never leaves one behind when the end races it', async () => {
    const sessions = new PgSessions(database.db);
    await database.transaction((tx) => new PgApiSessions(tx).ended('ca4', 'ci', new Date().toISOString()));
    expect((await createIfClear(sessions, viewer, 'c-s1', reuse('ca4'), 25, candidate('ca4', 'c-s1'))).created).toBe(
      'ended',
    );
    for (let i = 0; i < 200; i++) {
      const id = `cr-${i}`;
      // Half of the API sessions are known before the race (their row is locked for share), half are not.
      if (i % 2) await started(id);
      await Promise.all([
        createIfClear(sessions, viewer, 'c-s1', reuse(id), 25, candidate(id, 'c-s1')),
        database.transaction((tx) => new PgApiSessions(tx).ended(id, 'ci', new Date().toISOString())),
        createIfClear(sessions, viewer, 'c-s2', reuse(id), 25, candidate(id, 'c-s2')),
      ]);
      expect(await count(id), id).toBe(0);
    }
  });

  describe('grouped into few statements (SessionCreationBatcher)', () => {
    it('answers each of many concurrent requests as one statement each would, in fewer statements', async () => {
      const batcher = new SessionCreationBatcher(database.db, { concurrency: 2, maxBatch: 16 });
      const sessions = new PgSessions(database.db, batcher);
      const apiSessions = Array.from({ length: 20 }, (_, i) => `cb-${i}`);
      for (const id of apiSessions.filter((_, i) => i % 2)) await started(id);
      // Every (API session, service) pair four times, plus requests that must not insert.
      const requests = apiSessions.flatMap((id) =>
        ['c-s1', 'c-s2'].flatMap((svcId) => Array.from({ length: 4 }, (_, n) => ({ id, svcId, n }))),
      );
      const answers = await Promise.all([
        ...requests.map((q) =>
          createIfClear(sessions, viewer, q.svcId, reuse(q.id), 25, candidate(q.id, q.svcId, q.n)),
        ),
        createIfClear(sessions, viewer, 'c-posture', reuse('cb-0'), 25, candidate('cb-0', 'c-posture')),
        createIfClear(sessions, viewer, 'c-norouter', reuse('cb-0'), 25, candidate('cb-0', 'c-norouter')),
        createIfClear(
          sessions,
          { identityId: 'nobody', isAdmin: false },
          'c-s1',
          reuse('cb-x'),
          25,
          candidate('cb-x', 'c-s1'),
        ),
      ]);
      const [posture, noRouter, stranger] = answers.slice(requests.length);
      expect(posture!.created).toBeUndefined();
      expect(posture!.context?.postureChecked).toBe(true);
      expect(noRouter!.created).toBeUndefined();
      expect(noRouter!.context?.edgeRouters).toEqual([]);
      expect(stranger).toEqual({});
      // Every request of a pair answers the one session of that pair.
      const byPair = new Map<string, Set<string | undefined>>();
      requests.forEach((q, i) => {
        const a = answers[i]!;
        const id = (a.created as Session | undefined)?.id ?? a.context?.existing?.id;
        const key = `${q.id}/${q.svcId}`;
        byPair.set(key, (byPair.get(key) ?? new Set()).add(id));
      });
      for (const [pair, ids] of byPair) {
        expect(ids.has(undefined), pair).toBe(false);
        expect(ids.size, pair).toBe(1);
      }
      for (const id of apiSessions) expect(await count(id), id).toBe(2);
      expect(await count('cb-x')).toBe(0);
      expect(batcher.counts.facts.requests).toBe(answers.length);
      expect(batcher.counts.facts.statements + batcher.counts.inserts.statements).toBeLessThan(answers.length / 4);
    });

    it('a creation racing the end of its API session never leaves a session behind (200 races, grouped)', async () => {
      const batcher = new SessionCreationBatcher(database.db, { concurrency: 2, maxBatch: 8 });
      const sessions = new PgSessions(database.db, batcher);
      const ids = Array.from({ length: 200 }, (_, i) => `cbr-${i}`);
      for (const id of ids.filter((_, i) => i % 2)) await started(id);
      await Promise.all(
        ids.flatMap((id) => [
          createIfClear(sessions, viewer, 'c-s1', reuse(id), 25, candidate(id, 'c-s1')),
          database.transaction((tx) => new PgApiSessions(tx).ended(id, 'ci', new Date().toISOString())),
          createIfClear(sessions, viewer, 'c-s2', reuse(id), 25, candidate(id, 'c-s2')),
        ]),
      );
      for (const id of ids) expect(await count(id), id).toBe(0);
    });

    it('groups creations on PGlite too (npm start): one session per pair, fewer statements', async () => {
      const lite = await openDatabase({ pgliteMemory: true });
      try {
        await migrate(lite, migrations);
        await seed(lite);
        const batcher = new SessionCreationBatcher(lite.db);
        const sessions = new PgSessions(lite.db, batcher);
        const requests = ['cl-0', 'cl-1', 'cl-2'].flatMap((id) =>
          ['c-s1', 'c-s2'].flatMap((svcId) => [0, 1, 2].map((n) => ({ id, svcId, n }))),
        );
        const answers = await Promise.all(
          requests.map((q) => createIfClear(sessions, viewer, q.svcId, reuse(q.id), 25, candidate(q.id, q.svcId, q.n))),
        );
        const ids = answers.map((a) => (a.created as Session | undefined)?.id ?? a.context?.existing?.id);
        expect(ids.every(Boolean)).toBe(true);
        expect(new Set(ids).size).toBe(6);
        const [row] = await queryRows<{ n: number }>(lite.db, 'select count(*)::int as n from sessions');
        expect(Number(row!.n)).toBe(6);
        expect(batcher.counts.facts.statements).toBeLessThan(requests.length);
        expect(batcher.counts.inserts.statements).toBeLessThan(requests.length);
      } finally {
        await lite.close();
      }
    });

    it("never waits on one API session's row while holding another: no deadlock with the consumer", async () => {
      // The consumer's transaction ends cbd-2 (and holds its row), then learns of cbd-1; a
      // statement grouping creations for both must not hold cbd-1 (sorted first) while waiting for cbd-2.
      await started('cbd-2');
      const batcher = new SessionCreationBatcher(database.db);
      const sessions = new PgSessions(database.db, batcher);
      const lockWaits = async () =>
        Number(
          (
            await queryRows<{ n: number }>(
              database.db,
              `select count(*)::int as n from pg_stat_activity
                where datname = current_database() and wait_event_type = 'Lock'`,
            )
          )[0]!.n,
        );
      let creations: Promise<unknown[]> | undefined;
      await database.transaction(async (tx) => {
        // Deadlocks found fast (a cycle would otherwise stall a second, then abort one side).
        await queryRows(tx, "set local deadlock_timeout = '50ms'");
        await new PgApiSessions(tx).ended('cbd-2', 'ci', new Date().toISOString());
        creations = Promise.all([
          createIfClear(sessions, viewer, 'c-s1', reuse('cbd-1'), 25, candidate('cbd-1', 'c-s1')),
          createIfClear(sessions, viewer, 'c-s1', reuse('cbd-2'), 25, candidate('cbd-2', 'c-s1')),
        ]);
        // Something now waits for this transaction's lock on cbd-2.
        const deadline = Date.now() + 10_000;
        while ((await lockWaits()) === 0) {
          if (Date.now() > deadline) throw new Error('no creation waited for the ended API session');
          await new Promise((r) => setTimeout(r, 5));
        }
        await new PgApiSessions(tx).started(apiSessionStart('cbd-1', 'ci'));
      });
      const [fresh, ended] = (await creations!) as { created?: Session | 'ended' }[];
      expect((fresh!.created as Session).apiSessionId).toBe('cbd-1');
      expect(ended!.created).toBe('ended');
      expect(await count('cbd-2')).toBe(0);
      expect(await count('cbd-1')).toBe(1);
    });

    it("one request's failure is its own: the others of its statement are answered", async () => {
      const batcher = new SessionCreationBatcher(database.db, { concurrency: 1, maxBatch: 64 });
      const sessions = new PgSessions(database.db, batcher);
      // jsonb refuses the NUL escape: the statement of all three fails, then each is tried alone.
      const bad = { ...candidate('cbf-1', 'c-s1'), tags: { nul: '\u0000' } };
      const [first, failed, last] = await Promise.allSettled([
        createIfClear(sessions, viewer, 'c-s1', reuse('cbf-0'), 25, candidate('cbf-0', 'c-s1')),
        createIfClear(sessions, viewer, 'c-s1', reuse('cbf-1'), 25, bad),
        createIfClear(sessions, viewer, 'c-s2', reuse('cbf-0'), 25, candidate('cbf-0', 'c-s2')),
      ]);
      expect(first.status).toBe('fulfilled');
      expect(last.status).toBe('fulfilled');
      expect(failed.status).toBe('rejected');
      expect(await count('cbf-0')).toBe(2);
      expect(await count('cbf-1')).toBe(0);
    });
  });
});
