import { randomUUID } from 'node:crypto';
import {
  type EdgeRouterState,
  apiSessionDeletedV1State,
  eventTypes,
  identityState as identityStateSchema,
  subjects,
} from '@ziti/contracts';
import {
  type ApiSessionRecord,
  type Database,
  RedisApiSessionStore,
  SecretBox,
  openDatabase,
  queryRows,
} from '@ziti/platform';
import { verifyChain } from '@ziti/x509';
import { Redis } from 'ioredis';
import { createGuardrails, generate } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, infra, uniqueName, waitFor } from '../../../../test/support/infra.ts';
import { JoseSignerKeys } from '../../src/external-jwt-signers/jose-signer-keys.adapter.ts';
import { OtplibTotp, PngQrCodes } from '../../src/mfas/otplib-totp.adapter.ts';
import { RouterIdentities } from '../../src/router-identities/router-identities.domain.ts';
import { AuthenticationService } from '../../src/api-sessions/authentication.domain.ts';
import { AuthenticatorService } from '../../src/authenticators/authenticators.domain.ts';
import { IdentityService, identityState } from '../../src/identities/identities.domain.ts';
import { MfaService } from '../../src/mfas/mfas.domain.ts';
import { ApiSessionSweeper } from '../../src/api-sessions/sweeper.domain.ts';
import { SessionEnding } from '../../src/api-sessions/session-ending.domain.ts';
import { PgApiSessionQuery } from '../../src/api-sessions/api-sessions.store.ts';
import { RecordedAttempts, authTestBed, plainHasher, seed } from '../authentication/support.ts';

/** These tests register no certificate of an unknown CA (authentication.test.ts covers the refusal). */
const vouching = { vouchesFor: async () => true };

/**
 * The facts auth publishes (issue 9): every path that opens or ends an API session, changes an
 * MFA or ends a timed disable writes its event to the outbox, in the transaction of the change,
 * on the real Postgres and Redis.
 */
type Bed = Awaited<ReturnType<typeof authTestBed>>;
interface OutboxRow {
  /** The event's position: the order the relay publishes and consumers apply (docs/adr/0008). */
  position: number;
  subject: string;
  type: string;
  version: number;
  payload: Record<string, unknown>;
  /** The inserting transaction: rows of one unit of work share it. */
  tx: string;
}

const graceMs = 300;
const ttl = 600;
const prefix = `${uniqueName('zt')}:`;
let bed: Bed;
let drop: () => Promise<void>;
let database: Database;
let sessions: RedisApiSessionStore;
let replica: RedisApiSessionStore;
let identities: IdentityService;
let authenticators: AuthenticatorService;
let auth: AuthenticationService;
let mfa: MfaService;
let routers: RouterIdentities;
let n = 0;
const box = new SecretBox(SecretBox.generateSecret());
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });

beforeAll(async () => {
  const db = await createTestDatabase('authevents');
  drop = db.drop;
  database = await openDatabase({ url: db.url });
  bed = await authTestBed({ database });
  await seed(bed.work);
  sessions = new RedisApiSessionStore(infra.redisUrl, prefix, { endGraceMs: graceMs });
  replica = new RedisApiSessionStore(infra.redisUrl, prefix, { endGraceMs: graceMs });
  identities = new IdentityService(bed.work, sessions, ttl);
  authenticators = new AuthenticatorService(bed.work, plainHasher, sessions, vouching);
  auth = authenticationWith(plainHasher);
  mfa = new MfaService(bed.work, sessions, new OtplibTotp(), new PngQrCodes(), box, {
    issuer: 'openziti.io',
    sessionTtlSeconds: ttl,
    attempts: new RecordedAttempts(),
  });
  routers = new RouterIdentities(sessions);
});

/** The authentication service on this file's database and sessions, with the given hasher. */
function authenticationWith(hasher: typeof plainHasher): AuthenticationService {
  return new AuthenticationService({
    work: bed.work,
    sessions,
    hasher,
    sessionQuery: new PgApiSessionQuery(database.db),
    sessionTtlSeconds: ttl,
    signerKeys: new JoseSignerKeys(),
    certificates: { controllerCaBundle: async () => [], verifyWithPki: async () => null },
    verifyChain: (leaf, intermediates, roots, options) => verifyChain(leaf, intermediates, roots, options),
    lockout: (id, minutes) => identities.disable(id, minutes),
    attempts: new RecordedAttempts(),
  });
}

afterAll(async () => {
  await sessions?.close();
  await replica?.close();
  await bed?.close();
  await drop?.();
  const redis = new Redis(infra.redisUrl);
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

const sweeper = (store = sessions, leaseMs = 60_000) => new ApiSessionSweeper(bed.work, store, { leaseMs });

/** The position of the last event written (what `outboxSince` lists after). */
async function mark(): Promise<number> {
  const [row] = await queryRows<{ last: string | null }>(database.db, 'select max(position) as last from outbox');
  return Number(row?.last ?? 0);
}

/**
 * The events after position `after`, in position order, as consumers apply them. The sort names
 * the table's column (`o.position`): an unqualified name in ORDER BY is the output column of that
 * name first, and `select id::text as id … order by id` sorted as text (…, '100', '98', '99').
 */
async function outboxSince(after: number, type?: string): Promise<OutboxRow[]> {
  const rows = await queryRows<Omit<OutboxRow, 'position'> & { position: string }>(
    database.db,
    `select o.position::text as position, o.subject, o.type, o.version, o.payload, o.xmin::text as tx from outbox o
      where o.position > $1 and ($2::text is null or o.type = $2) order by o.position`,
    [after, type ?? null],
  );
  const listed = rows.map((r) => ({
    ...r,
    position: Number(r.position),
    payload: typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload,
  }));
  const positions = listed.map((r) => r.position);
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
  return listed;
}

/** Backends of this database waiting for a lock. */
async function lockWaiters(): Promise<number> {
  const [row] = await queryRows<{ n: number }>(
    database.db,
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
  );
  return row!.n;
}

/**
 * Moves this database's event counters (positions and outbox ids) so that the next events take
 * positions 10^k - 1, 10^k, 10^k + 1: where positions gain a digit, a reader sorting them as text
 * lists the first of them last. Nothing consumes this database's outbox, so no one sees the skip.
 */
async function nextPositionsGainADigit(): Promise<void> {
  const [row] = await queryRows<{ last: string }>(
    database.db,
    'select greatest((select last from event_position), (select last_value from outbox_id_seq)) as last',
  );
  const last = Number(row!.last);
  const next = 10 ** String(last + 1).length - 1;
  await queryRows(database.db, 'update event_position set last = $1', [next - 1]);
  await queryRows(database.db, "select setval('outbox_id_seq', $1)", [next - 1]);
}

const ofSession = (rows: OutboxRow[], id: string) => rows.filter((r) => r.payload.id === id);

async function user() {
  const identity = await identities.create({ name: `events-user-${++n}`, type: 'User' });
  const username = `events-${n}-${randomUUID().slice(0, 6)}`;
  await authenticators.create({ method: 'updb', identityId: identity.id, username, password: 'Secret-Pass-1' });
  return { identity, username };
}

const login = (username: string) =>
  auth.authenticate({
    method: 'password',
    username,
    password: 'Secret-Pass-1',
    remoteAddress: '10.1.2.3',
    configTypes: ['all'],
  });

/** A session put straight into the store (router identities have no authenticator). */
async function storedSession(identityId: string, ttlSeconds = ttl): Promise<ApiSessionRecord> {
  const now = new Date().toISOString();
  const record: ApiSessionRecord = {
    id: `stored-${++n}-${randomUUID().slice(0, 8)}`,
    token: randomUUID(),
    identityId,
    identityName: 'x',
    isAdmin: false,
    authenticatorId: '',
    authMethod: 'cert',
    ipAddress: '127.0.0.1',
    configTypes: [],
    isMfaRequired: false,
    isMfaComplete: false,
    tags: {},
    createdAt: now,
    updatedAt: now,
  };
  await sessions.create(record, ttlSeconds);
  return record;
}

const routerState = (id: string, o: Partial<EdgeRouterState> = {}): EdgeRouterState => ({
  id,
  name: `router-${id}`,
  roleAttributes: [],
  isTunnelerEnabled: true,
  isVerified: true,
  disabled: false,
  noTraversal: false,
  cost: 0,
  fingerprint: null,
  hostname: '',
  supportedProtocols: {},
  appData: {},
  tags: {},
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
  ...o,
});

function expectDeleted(row: OutboxRow | undefined, reason: string, identityId: string): void {
  expect(row).toBeDefined();
  expect(row!.subject).toBe(subjects.event('auth', eventTypes.apiSessionDeleted.type));
  expect(row!.version).toBe(eventTypes.apiSessionDeleted.version);
  const data = eventTypes.apiSessionDeleted.schema.parse(row!.payload);
  expect(data).toMatchObject({ reason, identityId });
  // pki-enrollment's consumer reads `{id, identityId}` (v1): still there.
  expect(apiSessionDeletedV1State.parse(row!.payload)).toEqual({ id: data.id, identityId });
}

describe('API session events', () => {
  it('a login announces nothing: its session is in Redis, with the facts others get from the caller', async () => {
    const u = await user();
    const m = await mark();
    const { session } = await login(u.username);
    expect(await outboxSince(m)).toEqual([]);
    const live = await sessions.touch(session.token, ttl);
    expect(live).toMatchObject({
      id: session.id,
      identityId: u.identity.id,
      authMethod: 'password',
      configTypes: ['all'],
      ipAddress: '10.1.2.3',
    });
    expect(session.authenticatorId).not.toBe('');
  });

  it('a login that changes envInfo/sdkInfo records them with identity.updated (only when they change)', async () => {
    const u = await user();
    const envInfo = { os: 'linux', arch: 'amd64' };
    const sdkInfo = { type: 'ziti-sdk-golang', version: '0.20.0' };
    const withInfo = () =>
      auth.authenticate({
        method: 'password',
        username: u.username,
        password: 'Secret-Pass-1',
        remoteAddress: '10.1.2.3',
        envInfo,
        sdkInfo,
      });
    const m = await mark();
    const { identity } = await withInfo();
    expect(identity).toMatchObject({ envInfo, sdkInfo });
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type)).toEqual(['identity.updated']);
    const state = identityStateSchema.parse(rows[0]!.payload);
    expect(state.id).toBe(u.identity.id);
    expect(Date.parse(state.updatedAt)).toBeGreaterThan(u.identity.updatedAt.getTime());
    expect((await identities.get(u.identity.id)).envInfo).toEqual(envInfo);
    // The same values again change nothing, so nothing is announced.
    const again = await mark();
    await withInfo();
    expect(await outboxSince(again)).toEqual([]);
  });

  it('a login recording client info after its identity was deleted is refused and announces nothing', async () => {
    // The login reads the identity, checks the password, then records envInfo under the row lock.
    // Here the identity is deleted while the password is being checked: it must stay deleted (an
    // identity.updated after identity.deleted would make consumers upsert it back).
    let release!: () => void;
    let checking!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const inCheck = new Promise<void>((r) => (checking = r));
    const gated = authenticationWith({
      ...plainHasher,
      verify: async (password: string, hash: string, salt: string) => {
        checking();
        await gate;
        return plainHasher.verify(password, hash, salt);
      },
    });
    const u = await user();
    const m = await mark();
    const loggingIn = gated.authenticate({
      method: 'password',
      username: u.username,
      password: 'Secret-Pass-1',
      remoteAddress: '10.1.2.3',
      envInfo: { os: 'linux' },
    });
    await inCheck;
    await identities.delete(u.identity.id);
    release();
    await expect(loggingIn).rejects.toMatchObject({ code: 'INVALID_AUTH' });
    const events = (await outboxSince(m)).filter((r) => r.payload.id === u.identity.id).map((r) => r.type);
    expect(events).toEqual(['identity.deleted']);
    expect(await bed.work((s) => s.identities.get(u.identity.id))).toBeNull();
    expect(await sessions.listAll(ttl).then((all) => all.filter((x) => x.identityId === u.identity.id))).toEqual([]);
  });

  it('concurrent changes of different fields of one identity all survive, and the last event shows them all', async () => {
    // Each change reads the identity, changes its fields and writes the whole row: without the
    // row lock, one of two concurrent changes was lost every time (30 of 30 on Postgres). The first
    // round's events take positions where they gain a digit: read in any order but the positions'
    // own, its last event is not the last change (as in a round of a load-dependent commit order).
    for (let i = 0; i < 20; i++) {
      const u = await user();
      if (i === 0) await nextPositionsGainADigit();
      const m = await mark();
      await Promise.all([
        identities.update(u.identity.id, { roleAttributes: [`r${i}`] }, 'patch'),
        identities.update(u.identity.id, { tags: { round: String(i) } }, 'patch'),
        auth.authenticate({
          method: 'password',
          username: u.username,
          password: 'Secret-Pass-1',
          remoteAddress: '10.1.2.3',
          envInfo: { round: i },
        }),
      ]);
      const stored = await identities.get(u.identity.id);
      expect(stored).toMatchObject({ roleAttributes: [`r${i}`], tags: { round: String(i) }, envInfo: { round: i } });
      const updates = await outboxSince(m, eventTypes.identityUpdated.type);
      expect(updates).toHaveLength(3);
      const states = updates.map((r) => identityStateSchema.parse(r.payload));
      expect(states.at(-1)).toMatchObject({
        roleAttributes: [`r${i}`],
        tags: { round: String(i) },
        updatedAt: stored.updatedAt.toISOString(),
      });
      const stamps = states.map((state) => Date.parse(state.updatedAt));
      expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    }
  });

  it('a change that waited for the row lock is stamped after the change it waited for', async () => {
    // The clock is read once the row is locked: one read before the lock stamped a change older
    // than the change it waited for, and the identity's updatedAt went back.
    let t = Date.parse('2030-01-01T00:00:00.000Z');
    const clock = () => new Date((t += 1_000));
    const timed = new IdentityService(bed.work, sessions, ttl, clock);
    const u = await user();
    const m = await mark();
    let release!: () => void;
    let locked!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const holding = new Promise<void>((r) => (locked = r));
    // Another change of the identity holds its row lock until the update waits for it.
    const holder = bed.work(async (s) => {
      const current = (await s.identities.get(u.identity.id, { forUpdate: true }))!;
      locked();
      await gate;
      const next = { ...current, tags: { by: 'holder' }, updatedAt: clock() };
      await s.identities.update(next);
      await s.events.emit(eventTypes.identityUpdated, identityState(next));
    });
    await holding;
    const waiting = timed.update(u.identity.id, { roleAttributes: ['waited'] }, 'patch');
    try {
      await waitFor(async () => (await lockWaiters()) === 1, 'the update waiting for the row lock');
    } finally {
      release();
      await Promise.allSettled([holder, waiting]);
    }
    await Promise.all([holder, waiting]);
    const [first, second] = (await outboxSince(m, eventTypes.identityUpdated.type)).map((r) =>
      identityStateSchema.parse(r.payload),
    );
    expect(first).toMatchObject({ tags: { by: 'holder' }, roleAttributes: [] });
    expect(second).toMatchObject({ tags: { by: 'holder' }, roleAttributes: ['waited'] });
    expect(Date.parse(second!.updatedAt)).toBeGreaterThan(Date.parse(first!.updatedAt));
    expect((await identities.get(u.identity.id)).updatedAt.toISOString()).toBe(second!.updatedAt);
  });

  it('logout and an administrator delete publish apiSession.deleted (logout | admin) and leave no tombstone', async () => {
    const u = await user();
    const first = (await login(u.username)).session;
    const second = (await login(u.username)).session;
    const m = await mark();
    await auth.delete(first.id, 'logout');
    await auth.delete(second.id);
    await expect(auth.delete(second.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type)).toEqual(['apiSession.deleted', 'apiSession.deleted']);
    expectDeleted(ofSession(rows, first.id)[0], 'logout', u.identity.id);
    expectDeleted(ofSession(rows, second.id)[0], 'admin', u.identity.id);
    expect(await sessions.touch(first.token, ttl)).toBeNull();
    // Announced and forgotten: the sweeper has nothing more to say about them, even after the grace.
    await new Promise((resolve) => setTimeout(resolve, graceMs + 50));
    await sweeper().sweep();
    expect(ofSession(await outboxSince(m), first.id)).toHaveLength(1);
    expect(ofSession(await outboxSince(m), second.id)).toHaveLength(1);
  });

  it('disabling an identity publishes identity.updated and its sessions’ apiSession.deleted in one transaction', async () => {
    const u = await user();
    const a = (await login(u.username)).session;
    const b = (await login(u.username)).session;
    const m = await mark();
    await identities.disable(u.identity.id, 10);
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type).sort()).toEqual(['apiSession.deleted', 'apiSession.deleted', 'identity.updated']);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
    const updated = identityStateSchema.parse(rows.find((r) => r.type === 'identity.updated')!.payload);
    expect(updated.disabled).toBe(true);
    expect(Date.parse(updated.disabledUntil!) - Date.parse(updated.disabledAt!)).toBe(10 * 60_000);
    expectDeleted(ofSession(rows, a.id)[0], 'identityDisabled', u.identity.id);
    expectDeleted(ofSession(rows, b.id)[0], 'identityDisabled', u.identity.id);
    expect(await sessions.touch(a.token, ttl)).toBeNull();
  });

  it('an indefinite disable (a lockout of 0 minutes) ends the sessions with identityDisabled', async () => {
    const u = await user();
    const s = (await login(u.username)).session;
    const m = await mark();
    await identities.disable(u.identity.id, 0);
    expectDeleted(ofSession(await outboxSince(m), s.id)[0], 'identityDisabled', u.identity.id);
  });

  it('deleting an identity publishes identity.deleted, mfa.deleted and apiSession.deleted in one transaction', async () => {
    const u = await user();
    const s = (await login(u.username)).session;
    await mfa.enroll(u.identity.id);
    const m = await mark();
    await identities.delete(u.identity.id);
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type).sort()).toEqual(['apiSession.deleted', 'identity.deleted', 'mfa.deleted']);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
    expectDeleted(
      ofSession(rows, s.id).find((r) => r.type === 'apiSession.deleted'),
      'identityDeleted',
      u.identity.id,
    );
    expect(rows.find((r) => r.type === 'mfa.deleted')!.payload).toMatchObject({ identityId: u.identity.id });
    expect(await sessions.touch(s.token, ttl)).toBeNull();
  });

  it('deleting an authenticator publishes authenticator.deleted and the apiSession.deleted of the sessions made with it, in one transaction', async () => {
    const u = await user();
    const a = (await login(u.username)).session;
    const b = (await login(u.username)).session;
    const other = await storedSession(u.identity.id);
    const m = await mark();
    await authenticators.delete(a.authenticatorId);
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type).sort()).toEqual([
      'apiSession.deleted',
      'apiSession.deleted',
      'authenticator.deleted',
    ]);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
    expectDeleted(ofSession(rows, a.id)[0], 'authenticatorDeleted', u.identity.id);
    expectDeleted(ofSession(rows, b.id)[0], 'authenticatorDeleted', u.identity.id);
    expect(await sessions.touch(a.token, ttl)).toBeNull();
    expect(await sessions.touch(b.token, ttl)).toBeNull();
    // Made with another authenticator: it lives on.
    expect(await sessions.touch(other.token, ttl)).not.toBeNull();
    // Announced and forgotten: the sweeper adds nothing after the grace.
    await new Promise((resolve) => setTimeout(resolve, graceMs + 50));
    await sweeper().sweep();
    expect(ofSession(await outboxSince(m, 'apiSession.deleted'), a.id)).toHaveLength(1);
    await sessions.delete(other.id);
  });

  it('a session ended with its authenticator inside a consumer is announced once: by the commit, or by the sweeper after a rollback', async () => {
    const ending = new SessionEnding(sessions);
    for (const rollBack of [false, true]) {
      const u = await user();
      const { session } = await login(u.username);
      const m = await mark();
      const doomed = bed.work(async (s) => {
        const current = (await s.authenticators.get(session.authenticatorId))!;
        await s.authenticators.delete(current.id);
        await ending.within(
          s.events,
          { identityId: u.identity.id, authenticatorId: current.id },
          'authenticatorDeleted',
        );
        if (rollBack) throw new Error('the consumer failed before its commit');
      });
      if (rollBack) await expect(doomed).rejects.toThrow(/before its commit/);
      else await doomed;
      expect(await sessions.touch(session.token, ttl)).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, graceMs + 50));
      await waitFor(async () => {
        await sweeper().sweep();
        return ofSession(await outboxSince(m, 'apiSession.deleted'), session.id).length > 0;
      }, 'the end to be announced');
      await sweeper().sweep();
      const rows = ofSession(await outboxSince(m, 'apiSession.deleted'), session.id);
      expect(rows).toHaveLength(1);
      expectDeleted(rows[0], 'authenticatorDeleted', u.identity.id);
      expect((await sessions.claimEnded(1000, 1)).map((c) => c.record.id)).not.toContain(session.id);
    }
  });

  it('refusing to delete the default admin ends none of its sessions', async () => {
    const admin = await bed.work((s) => s.identities.findDefaultAdmin());
    const s = await storedSession(admin!.id);
    await expect(identities.delete(admin!.id)).rejects.toMatchObject({ code: 'ENTITY_CAN_NOT_BE_DELETED' });
    expect(await sessions.touch(s.token, ttl)).not.toBeNull();
    await sessions.delete(s.id);
  });

  describe('Router identities', () => {
    // A unit of work stands for the consumer's transaction and its event sink.
    const apply = (state: EdgeRouterState, deleted: boolean) =>
      bed.work((s) => routers.apply({ identities: s.identities, events: s.events }, state, deleted, true));

    it('removing a router identity publishes its sessions’ apiSession.deleted (routerRemoved) with identity.deleted', async () => {
      const id = `rtr-${++n}`;
      expect(await apply(routerState(id), false)).toBe('created');
      const s = await storedSession(id);
      const m = await mark();
      expect(await apply(routerState(id), true)).toBe('deleted');
      const rows = await outboxSince(m);
      expect(rows.map((r) => r.type).sort()).toEqual(['apiSession.deleted', 'identity.deleted']);
      expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
      expectDeleted(
        ofSession(rows, s.id).find((r) => r.type === 'apiSession.deleted'),
        'routerRemoved',
        id,
      );
      expect(await sessions.touch(s.token, ttl)).toBeNull();
      // Nothing could forget the tombstone after the commit: the sweeper drops it silently.
      await new Promise((resolve) => setTimeout(resolve, graceMs + 50));
      await sweeper().sweep();
      expect(ofSession(await outboxSince(m, 'apiSession.deleted'), s.id)).toHaveLength(1);
      expect((await sessions.claimEnded(1000, 1)).map((c) => c.record.id)).not.toContain(s.id);
    });

    it('a removal that rolls back is announced by the sweeper, once', async () => {
      const id = `rtr-${++n}`;
      await apply(routerState(id), false);
      const s = await storedSession(id);
      const m = await mark();
      await expect(
        bed.work(async (s) => {
          await routers.apply({ identities: s.identities, events: s.events }, routerState(id), true, true);
          throw new Error('the consumer failed before its commit');
        }),
      ).rejects.toThrow(/before its commit/);
      expect(await outboxSince(m)).toEqual([]);
      expect(await sessions.touch(s.token, ttl)).toBeNull();
      await waitFor(async () => {
        await sweeper().sweep();
        return ofSession(await outboxSince(m), s.id).length > 0;
      }, 'the tombstone to be announced');
      await sweeper().sweep();
      const rows = ofSession(await outboxSince(m), s.id);
      expect(rows).toHaveLength(1);
      expectDeleted(rows[0], 'routerRemoved', id);
    });
  });

  it('a removal retried after a rollback announces the sessions the failed attempt ended', async () => {
    const id = `rtr-${++n}`;
    await bed.work((s) => routers.apply({ identities: s.identities, events: s.events }, routerState(id), false, true));
    const s = await storedSession(id);
    const m = await mark();
    const remove = (fail: boolean) =>
      bed.work(async (stores) => {
        await routers.apply({ identities: stores.identities, events: stores.events }, routerState(id), true, true);
        if (fail) throw new Error('the consumer failed before its commit');
      });
    await expect(remove(true)).rejects.toThrow(/before its commit/);
    await remove(false);
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type).sort()).toEqual(['apiSession.deleted', 'identity.deleted']);
    expect(new Set(rows.map((r) => r.tx)).size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, graceMs + 50));
    await sweeper().sweep();
    expect(ofSession(await outboxSince(m), s.id)).toHaveLength(1);
  });

  it('a session ended but never announced (a crash) is announced by the sweeper with its reason', async () => {
    const u = await user();
    const s = (await login(u.username)).session;
    const m = await mark();
    await sessions.end(s.id, 'logout');
    await waitFor(async () => {
      await sweeper().sweep();
      return ofSession(await outboxSince(m), s.id).length > 0;
    }, 'the tombstone to be announced');
    const rows = ofSession(await outboxSince(m), s.id);
    expect(rows).toHaveLength(1);
    expectDeleted(rows[0], 'logout', u.identity.id);
  });

  it('two sweepers racing publish exactly one apiSession.expired per expired session', async () => {
    const identityId = (await user()).identity.id;
    const expiring = await Promise.all(Array.from({ length: 25 }, () => storedSession(identityId, 1)));
    const m = await mark();
    const a = sweeper(sessions);
    const b = sweeper(replica);
    const expiredOf = async () =>
      (await outboxSince(m, eventTypes.apiSessionExpired.type)).filter((r) => r.payload.identityId === identityId);
    await waitFor(
      async () => {
        await Promise.all([a.sweep(), b.sweep()]);
        return (await expiredOf()).length >= expiring.length;
      },
      'every expired session to be announced',
      15_000,
    );
    await Promise.all([a.sweep(), b.sweep()]);
    const rows = await expiredOf();
    expect(rows.map((r) => r.payload.id).sort()).toEqual(expiring.map((s) => s.id).sort());
    for (const row of rows) {
      expect(row.subject).toBe(subjects.event('auth', 'apiSession.expired'));
      expect(row.version).toBe(1);
      const data = eventTypes.apiSessionExpired.schema.parse(row.payload);
      const created = Date.parse(expiring.find((s) => s.id === data.id)!.createdAt);
      expect(Math.abs(Date.parse(data.endedAt) - (created + 1000))).toBeLessThan(1500);
    }
  });
});

describe('MFA events', () => {
  const code = (secret: string) => generate({ secret, guardrails, epoch: Math.floor(Date.now() / 1000) });

  it('enrolment, verification and self-service removal publish mfa.created, mfa.verified, mfa.deleted', async () => {
    const u = await user();
    const s = (await login(u.username)).session;
    const m = await mark();
    const record = await mfa.enroll(u.identity.id);
    await mfa.verify(u.identity.id, s.id, await code(record.secret));
    await mfa.remove(u.identity.id, await code(record.secret));
    const all = await outboxSince(m);
    expect(all.map((r) => [r.type, r.version, r.subject])).toEqual([
      ['mfa.created', 1, subjects.event('auth', 'mfa.created')],
      ['mfa.verified', 1, subjects.event('auth', 'mfa.verified')],
      // Verifying in a session passes MFA for it (MFA posture checks count from then).
      ['apiSession.mfaPassed', 1, subjects.event('auth', 'apiSession.mfaPassed')],
      ['mfa.deleted', 1, subjects.event('auth', 'mfa.deleted')],
    ]);
    const passed = eventTypes.apiSessionMfaPassed.schema.parse(all[2]!.payload);
    expect(passed).toMatchObject({ id: s.id, identityId: u.identity.id });
    const rows = all.filter((r) => r.type.startsWith('mfa.'));
    const [created, verified, deleted] = rows.map((r) => eventTypes.mfaCreated.schema.parse(r.payload));
    expect(created).toEqual({
      id: record.id,
      identityId: u.identity.id,
      isVerified: false,
      createdAt: record.createdAt.toISOString(),
      updatedAt: record.createdAt.toISOString(),
    });
    expect(verified).toMatchObject({ id: record.id, isVerified: true, createdAt: created!.createdAt });
    expect(deleted).toEqual(verified);
  });

  it('an administrator’s removal publishes mfa.deleted; removing none publishes nothing', async () => {
    const u = await user();
    const record = await mfa.enroll(u.identity.id);
    const m = await mark();
    await mfa.removeForIdentity(u.identity.id);
    await mfa.removeForIdentity(u.identity.id);
    const rows = await outboxSince(m);
    expect(rows.map((r) => r.type)).toEqual(['mfa.deleted']);
    expect(rows[0]!.payload).toMatchObject({ id: record.id, identityId: u.identity.id, isVerified: false });
  });
});

describe('timed disables', () => {
  const lapse = (id: string) =>
    queryRows(database.db, "update identities set disabled_until = now() - interval '1 second' where id = $1", [id]);

  it('the end of a timed disable is published as identity.updated with disabled=false, once, by racing sweepers', async () => {
    const u = await user();
    await identities.disable(u.identity.id, 5);
    await lapse(u.identity.id);
    const m = await mark();
    const a = new ApiSessionSweeper(bed.work, sessions, { intervalMs: 100 });
    const b = new ApiSessionSweeper(bed.work, replica, { intervalMs: 100 });
    a.start();
    b.start();
    try {
      await waitFor(async () => (await outboxSince(m, 'identity.updated')).length > 0, 'the end of the disable');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
    const rows = (await outboxSince(m, 'identity.updated')).filter((r) => r.payload.id === u.identity.id);
    expect(rows).toHaveLength(1);
    const state = identityStateSchema.parse(rows[0]!.payload);
    expect(state.disabled).toBe(false);
    expect(state.disabledAt).not.toBeNull();
    expect(state.disabledUntil).not.toBeNull();
    // The state is the stored identity's, whatever the clock: the same as entityStates answers.
    const stored = await bed.work((s) => s.identities.get(u.identity.id));
    expect(identityState(stored!)).toEqual(state);
  });

  it('a change after the end of a timed disable records it itself; the sweeper then has nothing to add', async () => {
    const u = await user();
    await identities.disable(u.identity.id, 5);
    await lapse(u.identity.id);
    const m = await mark();
    await identities.update(u.identity.id, { tags: { k: 'v' } }, 'patch');
    await sweeper().sweep();
    const rows = (await outboxSince(m, 'identity.updated')).filter((r) => r.payload.id === u.identity.id);
    expect(rows.map((r) => identityStateSchema.parse(r.payload).disabled)).toEqual([false]);
  });

  it('an indefinite disable and an enable are recorded as they are', async () => {
    const u = await user();
    const m = await mark();
    await identities.disable(u.identity.id, 0);
    await sweeper().sweep();
    await identities.enable(u.identity.id);
    const rows = (await outboxSince(m, 'identity.updated')).map((r) => identityStateSchema.parse(r.payload));
    expect(rows.map((r) => [r.disabled, r.disabledAt !== null, r.disabledUntil])).toEqual([
      [true, true, null],
      [false, false, null],
    ]);
  });

  it('identity events written before disabledAt/disabledUntil still parse', () => {
    const old = identityState({ ...newIdentityFields(), disabled: true });
    const { disabledAt: _a, disabledUntil: _u, ...v1 } = old;
    expect(identityStateSchema.parse(v1)).toMatchObject({ disabled: true, disabledAt: null, disabledUntil: null });
  });
});

function newIdentityFields() {
  const now = new Date();
  return {
    id: 'old',
    name: 'old',
    typeId: 'Default',
    isAdmin: false,
    isDefaultAdmin: false,
    roleAttributes: [],
    externalId: null,
    authPolicyId: 'default',
    disabled: false,
    disabledAt: null,
    disabledUntil: null,
    defaultHostingPrecedence: null,
    defaultHostingCost: 0,
    serviceHostingCosts: {},
    serviceHostingPrecedences: {},
    appData: {},
    envInfo: {},
    sdkInfo: {},
    tags: {},
    createdAt: now,
    updatedAt: now,
  };
}
