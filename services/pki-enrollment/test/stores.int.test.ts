import { ApiError } from '@ziti/contracts';
import {
  type Database,
  type Db,
  SecretBox,
  createUnitOfWork,
  migrate,
  openDatabase,
  pgErrorOf,
  queryRows,
} from '@ziti/platform';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import type { Ca, Enrollment, SessionCertificate } from '../src/shared/model.domain.ts';
import type { EnrollmentStatePages } from '../src/shared/maintenance.domain.ts';
import type { PkiMaterialStore, StoredMaterial } from '../src/controller-pki/pki-material.ports.ts';
import type { PkiStores, UnitOfWork } from '../src/shared/stores.ports.ts';
import { PgCaStore } from '../src/cas/cas.store.ts';
import { PgEnrollmentStore, enrollmentStatesPage } from '../src/enrollments/enrollments.store.ts';
import { PgPkiMaterialStore } from '../src/controller-pki/pki-material.store.ts';
import { PgSessionCertificateStore } from '../src/session-certificates/session-certificates.store.ts';
import {
  apiError,
  at,
  bytewise,
  counter,
  emptier,
  lockedReadModifyWrites,
  rejection,
  storeTargets,
} from '../../../test/support/store-contract.ts';

/**
 * pki-enrollment's stores as one contract run on the real Postgres and on PGlite (what `npm start`
 * uses): the same SQL must behave the same on both. Each store is driven through its port
 * (`PkiStores`, `PkiMaterialStore`, `EnrollmentStatePages`). Each target is one database of this
 * file (an in-memory PGlite takes seconds to open), emptied after every case: every case starts
 * from a freshly migrated database.
 */

const minutes = (n: number) => n * 60_000;

/**
 * A migrated pki-enrollment database of `kind`, its stores bound as app.ts binds them
 * (certificates on a test clock).
 */
async function pkiDatabase(kind: (typeof storeTargets)[number]) {
  let database: Database;
  let drop = async () => undefined as void;
  if (kind === 'postgres') {
    const db = await createTestDatabase('pkis');
    database = await openDatabase({ url: db.url, poolSize: 4 });
    drop = db.drop;
  } else {
    database = await openDatabase({ pgliteMemory: true });
  }
  await migrate(database, migrations);
  const box = new SecretBox(SecretBox.generateSecret());
  const clock = { now: at() };
  const work: UnitOfWork = createUnitOfWork<PkiStores>(database, undefined, 'pki-enrollment', (tx, events) => ({
    cas: new PgCaStore(tx),
    enrollments: new PgEnrollmentStore(tx, box, events),
    sessionCertificates: new PgSessionCertificateStore(tx, () => clock.now),
    events,
  }));
  return {
    database,
    work,
    clock,
    drop: async () => {
      await database.close();
      await drop();
    },
  };
}

const ca = (id: string, o: Partial<Ca> = {}): Ca => ({
  id,
  name: `ca-${id}`,
  fingerprint: `fp-${id}`,
  certPem: `PEM ${id}`,
  isVerified: false,
  verificationToken: `vt-${id}`,
  isAutoCaEnrollmentEnabled: false,
  isOttCaEnrollmentEnabled: true,
  isAuthEnabled: true,
  identityRoles: [],
  identityNameFormat: '[caName]-[commonName]',
  externalIdClaim: null,
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const enrollment = (id: string, o: Partial<Enrollment> = {}): Enrollment => ({
  id,
  method: 'ott',
  token: `token-${id}`,
  jwt: `jwt.${id}.sig`,
  identityId: `identity-${id}`,
  edgeRouterId: null,
  transitRouterId: null,
  caId: null,
  username: null,
  expiresAt: at(minutes(180)),
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const certificate = (id: string, apiSessionId: string, o: Partial<SessionCertificate> = {}): SessionCertificate => ({
  id,
  apiSessionId,
  identityId: 'i1',
  subject: `CN=${id}`,
  fingerprint: `fp-${id}`,
  certPem: `PEM ${id}`,
  validFrom: at(),
  validTo: at(minutes(60)),
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

/** The events written to the outbox, in position order. */
async function outbox(database: Database): Promise<{ type: string; payload: Record<string, unknown> }[]> {
  const rows = await queryRows<{ type: string; payload: unknown }>(
    database.db,
    'select type, payload from outbox order by position',
  );
  return rows.map((r) => ({
    type: r.type,
    payload: (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>,
  }));
}

describe.each(storeTargets)('pki-enrollment stores on %s', (target) => {
  let b: Awaited<ReturnType<typeof pkiDatabase>> | undefined;
  let empty: () => Promise<void>;
  beforeAll(async () => {
    b = await pkiDatabase(target);
    empty = await emptier(b.database);
  });
  afterEach(async () => {
    b!.clock.now = at();
    await empty?.();
  });
  afterAll(async () => b?.drop());

  it('controller PKI material: insert if absent (the first stays), replace only over the certificate expected', async () => {
    const material: PkiMaterialStore = new PgPkiMaterialStore(b!.database.db);
    const root = (certPem: string, keyEncrypted: string | null = `key of ${certPem}`): StoredMaterial => ({
      name: 'root',
      certPem,
      keyEncrypted,
    });
    expect(await material.load('root')).toBeNull();
    expect(await material.insertIfAbsent(root('A'))).toEqual(root('A'));
    expect(await material.insertIfAbsent(root('B'))).toEqual(root('A'));
    expect(await material.load('root')).toEqual(root('A'));
    expect(await material.replace(root('C'), 'B')).toEqual(root('A'));
    expect(await material.replace(root('C', null), 'A')).toEqual(root('C', null));
    expect(await material.load('signer')).toBeNull();

    // Replicas racing to make the signer all end up with one of them, the same for all.
    const raced = await Promise.all(
      ['1', '2', '3', '4'].map((n) =>
        material.insertIfAbsent({ name: 'signer', certPem: `signer ${n}`, keyEncrypted: `key ${n}` }),
      ),
    );
    expect(new Set(raced.map((m) => m.certPem)).size).toBe(1);
    expect(await material.load('signer')).toEqual(raced[0]);
    // Replacements racing over one certificate: one wins, the others see it.
    const replaced = await Promise.all(
      ['x', 'y'].map((n) =>
        material.replace({ name: 'signer', certPem: `signer ${n}`, keyEncrypted: null }, raced[0]!.certPem),
      ),
    );
    expect(replaced[0]).toEqual(replaced[1]);
    expect(['signer x', 'signer y']).toContain(replaced[0]!.certPem);
  });

  it('CAs: insert, get (also locked), all in creation order, update keeps createdAt, unique name and fingerprint, names, delete', async () => {
    const { work } = b!;
    const c1 = ca('c1', {
      identityRoles: ['r1', 'r2'],
      externalIdClaim: {
        location: 'SAN_URI',
        matcher: 'SCHEME',
        matcherCriteria: 'spiffe',
        parser: 'SPLIT',
        parserCriteria: '/',
        index: 2,
      },
      tags: { k: { n: [1] } },
      createdAt: at(2),
    });
    await work(async (s) => {
      await s.cas.insert(c1);
      await s.cas.insert(ca('c2', { createdAt: at(1) }));
      await s.cas.insert(ca('c0', { createdAt: at(2) }));
    });
    expect(await work((s) => s.cas.get('c1'))).toEqual(c1);
    expect(await work((s) => s.cas.get('c1', { forUpdate: true }))).toEqual(c1);
    expect(await work((s) => s.cas.get('nope', { forUpdate: true }))).toBeNull();
    expect((await work((s) => s.cas.all())).map((c) => c.id)).toEqual(['c2', 'c0', 'c1']);
    expect(await work((s) => s.cas.names(['c1', 'c2', 'c1', 'nope']))).toEqual(
      new Map([
        ['c1', 'ca-c1'],
        ['c2', 'ca-c2'],
      ]),
    );
    expect(await work((s) => s.cas.names([]))).toEqual(new Map());

    const changed = {
      ...c1,
      name: 'renamed',
      isVerified: true,
      identityRoles: [],
      externalIdClaim: null,
      tags: {},
      createdAt: at(99),
      updatedAt: at(5),
    };
    await work((s) => s.cas.update(changed));
    expect(await work((s) => s.cas.get('c1'))).toEqual({ ...changed, createdAt: at(2) });

    expect(await apiError(work((s) => s.cas.insert(ca('c3', { name: 'ca-c2' }))))).toEqual({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'name', reason: "duplicate value 'ca-c2' in unique index on cas store", value: 'ca-c2' },
    });
    expect(await apiError(work((s) => s.cas.insert(ca('c3', { fingerprint: 'fp-c2' }))))).toEqual({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'certPem', reason: "duplicate value 'fp-c2' in unique index on cas store", value: 'fp-c2' },
    });
    expect(await apiError(work((s) => s.cas.update({ ...changed, name: 'ca-c0' })))).toEqual({
      code: 'COULD_NOT_VALIDATE',
      cause: { field: 'name', reason: "duplicate value 'ca-c0' in unique index on cas store", value: 'ca-c0' },
    });
    expect(await work((s) => s.cas.get('c3'))).toBeNull();

    expect(await work((s) => s.cas.delete('c2'))).toBe(true);
    expect(await work((s) => s.cas.delete('c2'))).toBe(false);
    expect((await work((s) => s.cas.all())).map((c) => c.id)).toEqual(['c0', 'c1']);
  });

  it('CAs list with a ZitiQL filter, bytewise sort and pages with their total', async () => {
    const { work } = b!;
    await work(async (s) => {
      for (const [i, name] of ['beta', 'Alpha', 'gamma', 'Delta', 'alpha'].entries())
        await s.cas.insert(
          ca(`c${i}`, {
            name,
            isVerified: i % 2 === 0,
            identityRoles: i < 2 ? ['ops'] : ['dev'],
            tags: { n: i },
            createdAt: at(i),
          }),
        );
    });
    const list = (input: { filter?: string; sort?: string; limit?: number; offset?: number }) =>
      work((s) => s.cas.list(input)).then((p) => ({
        names: p.items.map((c) => c.name),
        total: p.totalCount,
        pagination: p.pagination,
      }));
    expect(await list({ sort: 'name' })).toEqual({
      names: ['Alpha', 'Delta', 'alpha', 'beta', 'gamma'],
      total: 5,
      pagination: { limit: 10, offset: 0 },
    });
    expect(await list({ sort: 'name desc', limit: 2, offset: 1 })).toEqual({
      names: ['beta', 'alpha'],
      total: 5,
      pagination: { limit: 2, offset: 1 },
    });
    expect(await list({ filter: 'isVerified = true sort by createdAt desc' })).toMatchObject({
      names: ['alpha', 'gamma', 'beta'],
      total: 3,
    });
    expect(await list({ filter: 'anyOf(identityRoles) = "ops" and isVerified = false' })).toMatchObject({
      names: ['Alpha'],
      total: 1,
    });
    expect(await list({ filter: 'name icontains "ALPHA" sort by id' })).toMatchObject({
      names: ['Alpha', 'alpha'],
      total: 2,
    });
    expect(await list({ filter: 'tags.n > 2 sort by name skip 1 limit 1' })).toMatchObject({
      names: ['alpha'],
      total: 2,
    });
    expect(await list({ filter: 'name = "none"' })).toMatchObject({ names: [], total: 0 });
    const page = await work((s) => s.cas.list({ filter: 'name = "gamma"' }));
    expect(page.items).toEqual([
      ca('c2', { name: 'gamma', isVerified: true, identityRoles: ['dev'], tags: { n: 2 }, createdAt: at(2) }),
    ]);
    expect(page.filterableFields).toEqual(expect.arrayContaining(['name', 'isVerified', 'identityRoles']));
    expect((await apiError(work((s) => s.cas.list({ sort: 'nope' })))).code).toBe('INVALID_SORT_IDENTIFIER');
  });

  it('enrollments: token and JWT sealed at rest, found by token, unique per identity and method and per router, events leave with the change', async () => {
    const { work, database } = b!;
    await work((s) => s.cas.insert(ca('ca1')));
    const e1 = enrollment('e1', { tags: { a: 1 }, username: null });
    const e2 = enrollment('e2', {
      method: 'ottca',
      caId: 'ca1',
      identityId: 'identity-e1',
      expiresAt: at(minutes(5)),
    });
    const r1 = enrollment('r1', { method: 'erott', identityId: null, edgeRouterId: 'router-1' });
    const t1 = enrollment('t1', { method: 'trott', identityId: null, transitRouterId: 'router-2' });
    await work(async (s) => {
      for (const e of [e1, e2, r1, t1]) await s.enrollments.insert(e);
    });
    expect(await work((s) => s.enrollments.get('e1'))).toEqual(e1);
    expect(await work((s) => s.enrollments.get('e2', { forUpdate: true }))).toEqual(e2);
    expect(await work((s) => s.enrollments.findByToken('token-r1'))).toEqual(r1);
    expect(await work((s) => s.enrollments.findByToken('token-none'))).toBeNull();
    // Neither the token nor the JWT is stored in the clear.
    const stored = JSON.stringify(await queryRows(database.db, 'select * from enrollments'));
    for (const secret of ['token-e1', 'jwt.e1.sig', 'token-r1', 'jwt.t1.sig']) expect(stored).not.toContain(secret);

    const exists = {
      code: 'ENROLLMENT_EXISTS',
      cause: { field: 'method', reason: 'enrollment of same method exists', value: 'ott' },
    };
    expect(await apiError(work((s) => s.enrollments.insert(enrollment('e3', { identityId: 'identity-e1' }))))).toEqual(
      exists,
    );
    expect(
      await apiError(
        work((s) =>
          s.enrollments.insert(enrollment('r2', { method: 'erott', identityId: null, edgeRouterId: 'router-1' })),
        ),
      ),
    ).toEqual({ ...exists, cause: { ...exists.cause, value: 'erott' } });
    expect(await apiError(work((s) => s.enrollments.update({ ...e2, method: 'ott', updatedAt: at(1) })))).toEqual(
      exists,
    );
    // A token in use by another enrollment is no ENROLLMENT_EXISTS: the raw unique violation.
    const sameToken = await rejection(work((s) => s.enrollments.insert(enrollment('e4', { token: 'token-e1' }))));
    expect(sameToken).not.toBeInstanceOf(ApiError);
    expect(pgErrorOf(sameToken)).toMatchObject({ code: '23505' });
    // Checks of the table: one subject, an ottca names its CA, which must exist.
    const check = (e: Enrollment) => rejection(work((s) => s.enrollments.insert(e))).then((x) => pgErrorOf(x)?.code);
    expect(await check(enrollment('x1', { edgeRouterId: 'router-9' }))).toBe('23514');
    expect(await check(enrollment('x2', { method: 'ottca', identityId: 'identity-x2' }))).toBe('23514');
    expect(await check(enrollment('x3', { method: 'ottca', caId: 'nope' }))).toBe('23503');

    // Every write's event left with its transaction; failed ones left nothing.
    expect((await outbox(database)).map((e) => [e.type, e.payload.id])).toEqual([
      ['enrollment.created', 'e1'],
      ['enrollment.created', 'e2'],
      ['enrollment.created', 'r1'],
      ['enrollment.created', 't1'],
    ]);
    expect((await outbox(database))[1]!.payload).toEqual({
      id: 'e2',
      method: 'ottca',
      identityId: 'identity-e1',
      edgeRouterId: null,
      transitRouterId: null,
      caId: 'ca1',
      expiresAt: at(minutes(5)).toISOString(),
      createdAt: at().toISOString(),
      updatedAt: at().toISOString(),
    });

    // The foreign key takes a CA's ottca enrollments with it; the CA service deletes them first
    // through deleteByCa, which announces each (enrollment-events and enrollment.int tests).
    expect(await work((s) => s.cas.delete('ca1'))).toBe(true);
    expect(await work((s) => s.enrollments.get('e2'))).toBeNull();
    expect(await work((s) => s.enrollments.get('e1'))).toEqual(e1);
  });

  it('enrollments: one claim at a time until it lapses, released at will; clearing a router keeps a claimed enrollment', async () => {
    const { work, database } = b!;
    await work(async (s) => {
      await s.enrollments.insert(enrollment('e1'));
      await s.enrollments.insert(enrollment('r1', { method: 'erott', identityId: null, edgeRouterId: 'router-1' }));
      await s.enrollments.insert(enrollment('r2', { method: 'trott', identityId: null, transitRouterId: 'router-2' }));
    });
    const claim = (id: string, token: string, until: number, now: number) =>
      work((s) => s.enrollments.claim(id, token, at(until), at(now)));
    expect(await claim('e1', 'token-e1', 1_000, 0)).toBe(true);
    expect(await claim('e1', 'token-e1', 2_000, 500)).toBe(false);
    expect(await claim('e1', 'token-other', 2_000, 1_500)).toBe(false);
    expect(await claim('nope', 'token-e1', 2_000, 1_500)).toBe(false);
    // A claim lapses at its time.
    expect(await claim('e1', 'token-e1', 2_000, 1_000)).toBe(true);
    await work((s) => s.enrollments.release('e1'));
    expect(await claim('e1', 'token-e1', 3_000, 1_001)).toBe(true);
    await work((s) => s.enrollments.release('e1'));
    // A claim is not part of the entity: no event, no change to what is read.
    expect(await work((s) => s.enrollments.get('e1'))).toEqual(enrollment('e1'));

    expect(await claim('r1', 'token-r1', 5_000, 0)).toBe(true);
    expect(await work((s) => s.enrollments.clearRouter('router-1', at(4_999)))).toBe(false);
    expect(await work((s) => s.enrollments.get('r1'))).not.toBeNull();
    expect(await work((s) => s.enrollments.clearRouter('router-1', at(5_000)))).toBe(true);
    expect(await work((s) => s.enrollments.get('r1'))).toBeNull();
    expect(await work((s) => s.enrollments.clearRouter('router-2', at(0)))).toBe(true);
    expect(await work((s) => s.enrollments.clearRouter('router-none', at(0)))).toBe(true);
    expect((await outbox(database)).map((e) => [e.type, e.payload.id])).toEqual([
      ['enrollment.created', 'e1'],
      ['enrollment.created', 'r1'],
      ['enrollment.created', 'r2'],
      ['enrollment.deleted', 'r1'],
      ['enrollment.deleted', 'r2'],
    ]);
  });

  it('enrollments: list by identity with a filter, sort and pages; by identities; update and deletes announce themselves', async () => {
    const { work, database } = b!;
    await work(async (s) => {
      await s.enrollments.insert(enrollment('a1', { identityId: 'i1', createdAt: at(3), expiresAt: at(minutes(10)) }));
      await s.enrollments.insert(
        enrollment('a2', {
          identityId: 'i1',
          method: 'updb',
          username: 'u1',
          createdAt: at(1),
          expiresAt: at(minutes(30)),
        }),
      );
      await s.enrollments.insert(enrollment('A3', { identityId: 'i2', createdAt: at(2), expiresAt: at(minutes(20)) }));
      await s.enrollments.insert(enrollment('r1', { method: 'erott', identityId: null, edgeRouterId: 'router-1' }));
    });
    const list = (input: { filter?: string; sort?: string; limit?: number; offset?: number }, identityId?: string) =>
      work((s) => s.enrollments.list(input, identityId)).then((p) => ({
        ids: p.items.map((e) => e.id),
        total: p.totalCount,
      }));
    expect(await list({ sort: 'id' })).toEqual({ ids: ['A3', 'a1', 'a2', 'r1'], total: 4 });
    expect(await list({ sort: 'createdAt desc' }, 'i1')).toEqual({ ids: ['a1', 'a2'], total: 2 });
    expect(await list({ filter: 'identity = "i1" sort by createdAt' })).toEqual({ ids: ['a2', 'a1'], total: 2 });
    await expect(list({ filter: 'method = "ott"' })).rejects.toMatchObject({ code: 'INVALID_FILTER' });
    expect(await list({ filter: 'edgeRouter = "router-1"' })).toEqual({ ids: ['r1'], total: 1 });
    expect(await list({ filter: 'identity != null sort by id', limit: 1, offset: 2 })).toEqual({
      ids: ['a2'],
      total: 3,
    });
    expect(await list({}, 'nobody')).toEqual({ ids: [], total: 0 });
    expect((await work((s) => s.enrollments.list({ filter: 'id = "a2"' }))).items).toEqual([
      enrollment('a2', {
        identityId: 'i1',
        method: 'updb',
        username: 'u1',
        createdAt: at(1),
        expiresAt: at(minutes(30)),
      }),
    ]);
    expect((await apiError(work((s) => s.enrollments.list({ filter: 'token = "x"' })))).code).toBe('INVALID_FILTER');
    // By identities: in creation order, each identity once.
    expect((await work((s) => s.enrollments.listByIdentities(['i2', 'i1', 'i2']))).map((e) => e.id)).toEqual([
      'a2',
      'A3',
      'a1',
    ]);
    expect(await work((s) => s.enrollments.listByIdentities([]))).toEqual([]);

    // An update re-seals the new token (the old one finds nothing) and announces the stored createdAt.
    const a1 = (await work((s) => s.enrollments.get('a1', { forUpdate: true })))!;
    await work((s) =>
      s.enrollments.update({ ...a1, token: 'token-new', jwt: 'jwt.new', createdAt: at(77), updatedAt: at(9) }),
    );
    expect(await work((s) => s.enrollments.findByToken('token-a1'))).toBeNull();
    expect(await work((s) => s.enrollments.findByToken('token-new'))).toEqual({
      ...a1,
      token: 'token-new',
      jwt: 'jwt.new',
      updatedAt: at(9),
    });
    // An update of a missing enrollment announces nothing.
    await work((s) => s.enrollments.update(enrollment('gone')));

    expect(await work((s) => s.enrollments.delete('r1'))).toBe(true);
    expect(await work((s) => s.enrollments.delete('r1'))).toBe(false);
    expect((await work((s) => s.enrollments.deleteByIdentity('i1', ['a2', 'A3']))).sort()).toEqual(['a2']);
    expect(await work((s) => s.enrollments.deleteByIdentity('i1'))).toEqual(['a1']);
    expect(await work((s) => s.enrollments.deleteByIdentity('i1'))).toEqual([]);
    const events = (await outbox(database)).slice(4);
    expect(events.map((e) => [e.type, e.payload.id])).toEqual([
      ['enrollment.updated', 'a1'],
      ['enrollment.deleted', 'r1'],
      ['enrollment.deleted', 'a2'],
      ['enrollment.deleted', 'a1'],
    ]);
    expect(events[0]!.payload).toMatchObject({ createdAt: at(3).toISOString(), updatedAt: at(9).toISOString() });
    expect(events[3]!.payload).toMatchObject({ method: 'ott', identityId: 'i1', updatedAt: at(9).toISOString() });
  });

  it('enrollment state pages: bytewise id order after a cursor, a limit, or the given ids; never a token or JWT', async () => {
    const { work, database } = b!;
    const ids = ['b', 'B', 'a_1', 'a-1', 'A', 'ä', 'z'];
    await work(async (s) => {
      for (const [i, id] of ids.entries()) await s.enrollments.insert(enrollment(id, { createdAt: at(i) }));
    });
    const sorted = [...ids].sort(bytewise);
    const pages: EnrollmentStatePages<Db> = enrollmentStatesPage;
    const page = (request: { after?: string; limit?: number; ids?: string[] }) =>
      database.transaction((tx) => pages(tx, { type: 'enrollment', ...request }));
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const states = await page({ limit: 3, ...(after === undefined ? {} : { after }) });
      seen.push(...states.map((x) => x.id));
      if (states.length < 3) break;
      after = states.at(-1)!.id;
    }
    expect(seen).toEqual(sorted);
    expect((await page({ ids: ['z', 'none', 'B', 'a-1'] })).map((x) => x.id)).toEqual(['B', 'a-1', 'z']);
    const [state] = await page({ ids: ['ä'] });
    expect(state).toEqual({
      id: 'ä',
      method: 'ott',
      identityId: 'identity-ä',
      edgeRouterId: null,
      transitRouterId: null,
      caId: null,
      expiresAt: at(minutes(180)).toISOString(),
      createdAt: at(5).toISOString(),
      updatedAt: at().toISOString(),
    });
    // The state a page carries is what the events carry.
    const created = (await outbox(database)).find((e) => e.payload.id === 'ä')!;
    expect(created.payload).toEqual(state);
  });

  it('session certificates: only live ones are read, listed and counted; CERT_IN_USE; deletes by id, session, identity and expiry', async () => {
    const { work, clock } = b!;
    await work(async (s) => {
      await s.sessionCertificates.insert(certificate('k1', 's1', { validTo: at(minutes(10)), tags: { t: 1 } }));
      await s.sessionCertificates.insert(certificate('k2', 's1', { validTo: at(minutes(30)), subject: 'CN=B' }));
      await s.sessionCertificates.insert(certificate('K3', 's1', { validTo: at(minutes(20)), subject: 'CN=a' }));
      await s.sessionCertificates.insert(certificate('k4', 's2', { identityId: 'i2' }));
    });
    expect(await work((s) => s.sessionCertificates.get('k1', 's1'))).toEqual(
      certificate('k1', 's1', { validTo: at(minutes(10)), tags: { t: 1 } }),
    );
    expect(await work((s) => s.sessionCertificates.get('k1', 's2'))).toBeNull();
    expect(await work((s) => s.sessionCertificates.countBySession('s1'))).toBe(3);
    expect(
      await apiError(work((s) => s.sessionCertificates.insert(certificate('k5', 's2', { fingerprint: 'fp-k1' })))),
    ).toEqual({
      code: 'CERT_IN_USE',
      cause: { message: 'the certificate is already in use', data: { fingerprint: 'fp-k1' } },
    });

    const list = (input: { filter?: string; sort?: string; limit?: number; offset?: number }, session = 's1') =>
      work((s) => s.sessionCertificates.list(input, session)).then((p) => ({
        ids: p.items.map((c) => c.id),
        total: p.totalCount,
      }));
    expect(await list({ sort: 'validTo desc' })).toEqual({ ids: ['k2', 'K3', 'k1'], total: 3 });
    expect(await list({ sort: 'subject', limit: 2 })).toEqual({ ids: ['k2', 'K3'], total: 3 });
    expect(await list({ filter: 'subject contains "CN=k"' })).toEqual({ ids: ['k1'], total: 1 });
    expect(await list({}, 's3')).toEqual({ ids: [], total: 0 });

    // Past its validity a certificate is gone for every read, before it is deleted.
    clock.now = at(minutes(10));
    expect(await work((s) => s.sessionCertificates.get('k1', 's1'))).toBeNull();
    expect(await work((s) => s.sessionCertificates.countBySession('s1'))).toBe(2);
    expect(await list({ sort: 'id' })).toEqual({ ids: ['K3', 'k2'], total: 2 });
    expect(await work((s) => s.sessionCertificates.deleteExpired(at(minutes(20))))).toBe(2);
    expect(await work((s) => s.sessionCertificates.deleteExpired(at(minutes(20))))).toBe(0);

    expect(await work((s) => s.sessionCertificates.delete('k2', 's2'))).toBe(false);
    expect(await work((s) => s.sessionCertificates.delete('k2', 's1'))).toBe(true);
    expect(await work((s) => s.sessionCertificates.delete('k2', 's1'))).toBe(false);
    await work(async (s) => {
      await s.sessionCertificates.insert(certificate('k6', 's1', { validTo: at(minutes(90)) }));
      await s.sessionCertificates.insert(certificate('k7', 's1', { validTo: at(minutes(90)) }));
      await s.sessionCertificates.insert(certificate('k8', 's3', { validTo: at(minutes(90)), identityId: 'i2' }));
    });
    expect(await work((s) => s.sessionCertificates.deleteBySession('s1'))).toBe(2);
    expect(await work((s) => s.sessionCertificates.deleteByIdentity('i2'))).toBe(2);
    expect(await work((s) => s.sessionCertificates.deleteByIdentity('i2'))).toBe(0);
  });

  it('a read-modify-write under forUpdate waits for the transaction holding the row: both changes survive', async () => {
    const { work, database } = b!;
    await work(async (s) => {
      await s.cas.insert(ca('c1'));
      await s.enrollments.insert(enrollment('e1'));
    });
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.cas.get('c1', lock),
      (s, c) => s.cas.update({ ...c, tags: counter(c.tags) }),
    );
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.enrollments.get('e1', lock),
      (s, e) => s.enrollments.update({ ...e, tags: counter(e.tags) }),
    );
    expect((await work((s) => s.cas.get('c1')))!.tags).toEqual({ n: 2 });
    expect((await work((s) => s.enrollments.get('e1')))!.tags).toEqual({ n: 2 });
  });
});
