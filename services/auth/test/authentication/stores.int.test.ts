import { ApiError } from '@ziti/contracts';
import { type Database, openDatabase } from '@ziti/platform';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { normalizePrimary, normalizeSecondary } from '../../src/auth-policies/auth-policy.domain.ts';
import type { ExternalJwtSigner } from '../../src/external-jwt-signers/external-jwt-signer.domain.ts';
import type { Identity } from '../../src/shared/model.domain.ts';
import { PgOutstandingEnrollments } from '../../src/enrollments/outstanding-enrollments.store.ts';
import { authTestBed, seed } from './support.ts';

/**
 * The stores of the authentication work, as one contract run on the real Postgres and on PGlite
 * (what `npm start` uses): the same SQL must behave the same on both.
 */
const targets: Record<string, () => Promise<{ database: Database; drop: () => Promise<void> }>> = {
  postgres: async () => {
    const db = await createTestDatabase('auth');
    return { database: await openDatabase({ url: db.url }), drop: db.drop };
  },
  pglite: async () => ({ database: await openDatabase({ pgliteMemory: true }), drop: async () => undefined }),
};

const identity = (id: string, authPolicyId = 'default'): Identity => {
  const now = new Date();
  return {
    id,
    name: `name-${id}`,
    typeId: 'Default',
    isAdmin: false,
    isDefaultAdmin: false,
    roleAttributes: [],
    externalId: `ext-${id}`,
    authPolicyId,
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
};

const signer = (id: string, o: Partial<ExternalJwtSigner> = {}): ExternalJwtSigner => ({
  id,
  name: `signer-${id}`,
  enabled: true,
  issuer: `https://${id}.example`,
  audience: 'a',
  certPem: null,
  fingerprint: null,
  commonName: null,
  notBefore: null,
  notAfter: null,
  kid: null,
  jwksEndpoint: `https://${id}.example/jwks`,
  claimsProperty: null,
  useExternalId: false,
  externalAuthUrl: null,
  clientId: null,
  scopes: ['openid'],
  tags: { t: '1' },
  createdAt: new Date(),
  updatedAt: new Date(),
  ...o,
});

/** A stored MFA of `identityId` (its sealed values are placeholders: stores do not open them). */
const storedMfa = (id: string, identityId: string, isVerified: boolean, at = new Date()) => ({
  id,
  identityId,
  isVerified,
  sealedSecret: 'v1.a.b',
  sealedRecoveryCodes: 'v1.c.d',
  tags: {},
  createdAt: at,
  updatedAt: at,
});

for (const [name, open] of Object.entries(targets)) {
  describe(`authentication stores on ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = [];
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c();
    });

    async function bed() {
      const target = await open();
      const b = await authTestBed({ database: target.database });
      cleanups.push(target.drop, () => b.close());
      await seed(b.work);
      return b;
    }

    it('auth policies: insert, read back normalised, list by dotted fields, find references to signers', async () => {
      const { work } = await bed();
      await work(async (s) => {
        await s.extJwtSigners.insert(signer('s1'));
        await s.extJwtSigners.insert(signer('s2', { certPem: null }));
        const now = new Date();
        await s.authPolicies.insert({
          id: 'p1',
          name: 'p1',
          isSystem: false,
          primary: normalizePrimary({ extJwt: { allowedSigners: ['s1'] }, updb: { maxAttempts: 4 } }),
          secondary: normalizeSecondary({}),
          tags: {},
          createdAt: now,
          updatedAt: now,
        });
        await s.authPolicies.insert({
          id: 'p2',
          name: 'p2',
          isSystem: false,
          primary: normalizePrimary({}),
          secondary: normalizeSecondary({ requireExtJwtSigner: 's2', requireTotp: true }),
          tags: { a: 'b' },
          createdAt: now,
          updatedAt: now,
        });
      });
      const p1 = await work((s) => s.authPolicies.get('p1'));
      expect(p1!.primary.extJwt.allowedSigners).toEqual(['s1']);
      expect(p1!.primary.updb.maxAttempts).toBe(4);
      expect(await work((s) => s.authPolicies.idsReferencingSigner('s1'))).toEqual(['p1']);
      expect(await work((s) => s.authPolicies.idsReferencingSigner('s2'))).toEqual(['p2']);
      expect(await work((s) => s.authPolicies.idsReferencingSigner('s3'))).toEqual([]);
      const listed = await work((s) =>
        s.authPolicies.list({
          filter: 'anyOf(primary.extJwt.allowedSigners) = "s1" or secondary.requireTotp = true',
          sort: 'name asc',
        }),
      );
      expect(listed.items.map((p) => p.id)).toEqual(['p1', 'p2']);
      expect((await work((s) => s.authPolicies.list({ filter: 'tags.a = "b"' }))).items.map((p) => p.id)).toEqual([
        'p2',
      ]);
      const dup = await work((s) => s.authPolicies.insert({ ...p1!, id: 'p3' })).catch((e: unknown) => e);
      expect(dup).toBeInstanceOf(ApiError);
      expect((dup as ApiError).cause).toMatchObject({ field: 'name' });
      expect(await work((s) => s.authPolicies.delete('p2'))).toBe(true);
      expect(await work((s) => s.authPolicies.delete('p2'))).toBe(false);
    });

    it('signers: unique name, issuer and kid; key source check; client listing only shows enabled ones with a login URL', async () => {
      const { work } = await bed();
      await work((s) => s.extJwtSigners.insert(signer('a', { externalAuthUrl: 'https://a/login', kid: 'k-a' })));
      await work((s) => s.extJwtSigners.insert(signer('b', { enabled: false, externalAuthUrl: 'https://b/login' })));
      await work((s) => s.extJwtSigners.insert(signer('c')));
      for (const [clash, field] of [
        [signer('d', { name: 'signer-a' }), 'name'],
        [signer('d', { issuer: 'https://a.example' }), 'issuer'],
        [signer('d', { kid: 'k-a' }), 'kid'],
      ] as const) {
        const err = await work((s) => s.extJwtSigners.insert(clash)).catch((e: unknown) => e);
        expect((err as ApiError).cause, field).toMatchObject({ field });
      }
      const noKey = await work((s) => s.extJwtSigners.insert(signer('e', { jwksEndpoint: null }))).catch(
        (e: unknown) => e,
      );
      expect(noKey).toBeInstanceOf(Error);
      expect((await work((s) => s.extJwtSigners.findByIssuer('https://c.example')))!.id).toBe('c');
      expect((await work((s) => s.extJwtSigners.list({}, true))).items.map((x) => x.id)).toEqual(['a']);
      expect(
        (await work((s) => s.extJwtSigners.list({ filter: 'anyOf(scopes) = "openid" and enabled = true' }))).totalCount,
      ).toBe(2);
      const a = await work((s) => s.extJwtSigners.get('a'));
      await work((s) => s.extJwtSigners.update({ ...a!, audience: null, scopes: [] }));
      expect(await work((s) => s.extJwtSigners.get('a'))).toMatchObject({
        audience: null,
        scopes: [],
        tags: { t: '1' },
      });
    });

    it('a password login reads its authenticator, identity, policy and MFA in one statement', async () => {
      const { work } = await bed();
      const now = new Date();
      const updb = (id: string, identityId: string, username: string) => ({
        id,
        identityId,
        method: 'updb' as const,
        username,
        passwordHash: `hash-${id}`,
        salt: `salt-${id}`,
        certFingerprint: null,
        certPem: null,
        tags: { k: id },
        createdAt: now,
        updatedAt: now,
      });
      await work(async (s) => {
        await s.authPolicies.insert({
          id: 'lp',
          name: 'login-policy',
          isSystem: false,
          primary: normalizePrimary({ updb: { maxAttempts: 3 } }),
          secondary: normalizeSecondary({ requireTotp: true }),
          tags: {},
          createdAt: now,
          updatedAt: now,
        });
        await s.identities.insert({ ...identity('li1', 'lp'), roleAttributes: ['r'], envInfo: { os: 'linux' } });
        await s.identities.insert(identity('li2'));
        await s.authenticators.insert(updb('la1', 'li1', 'login-u1'));
        await s.authenticators.insert(updb('la2', 'li2', 'login-u2'));
        await s.mfa.insert(storedMfa('lm1', 'li1', true, now));
      });
      const read = (u: string) => work((s) => s.authenticators.findPasswordLogin(u, 'default'));

      const one = await read('login-u1');
      expect(one.authenticator).toEqual(await work((s) => s.authenticators.get('la1')));
      expect(one.identity).toEqual(await work((s) => s.identities.get('li1')));
      expect(one.policy).toEqual(await work((s) => s.authPolicies.get('lp')));
      expect(one.mfaVerified).toBe(true);
      // The failures counted against it come with it: a login with none clears nothing.
      expect(one.failedAttempts).toBe(0);
      await work((s) => s.loginAttempts.recordFailure('la1', now));
      await work((s) => s.loginAttempts.recordFailure('la1', now));
      expect((await read('login-u1')).failedAttempts).toBe(2);
      await work((s) => s.loginAttempts.reset('la1'));
      expect((await read('login-u1')).failedAttempts).toBe(0);

      const two = await read('login-u2');
      expect(two.identity?.id).toBe('li2');
      expect(two.policy).toEqual(await work((s) => s.authPolicies.get('default')));
      expect(two.mfaVerified).toBe(false);

      // An unknown username reads the fallback policy, as a known one reads its own.
      expect(await read('nobody')).toEqual({
        authenticator: null,
        identity: null,
        policy: await work((s) => s.authPolicies.get('default')),
        mfaVerified: false,
        failedAttempts: 0,
      });
    });

    it('mfa, failed attempts and traces', async () => {
      const { work } = await bed();
      await work((s) => s.identities.insert(identity('i1')));
      await work((s) => s.identities.insert(identity('i2')));
      const now = new Date();
      const mfa = storedMfa('m1', 'i1', false, now);
      await work((s) => s.mfa.insert(mfa));
      const again = await work((s) => s.mfa.insert({ ...mfa, id: 'm2' })).catch((e: unknown) => e);
      expect((again as ApiError).code).toBe('MFA_EXISTS');
      expect(await work((s) => s.mfa.verifiedAmong(['i1', 'i2']))).toEqual(new Set());
      await work(async (s) => {
        const locked = await s.mfa.getByIdentity('i1', true);
        await s.mfa.update({ ...locked!, isVerified: true });
      });
      expect(await work((s) => s.mfa.verifiedAmong(['i1', 'i2', 'i1']))).toEqual(new Set(['i1']));
      expect(await work((s) => s.mfa.deleteByIdentity('i1'))).toBe(true);
      expect(await work((s) => s.mfa.getByIdentity('i1'))).toBeNull();

      await work((s) =>
        s.authenticators.insert({
          id: 'a1',
          identityId: 'i2',
          method: 'updb',
          username: 'u2',
          passwordHash: 'h',
          salt: 's',
          certFingerprint: null,
          certPem: null,
          tags: {},
          createdAt: now,
          updatedAt: now,
        }),
      );
      expect(await work((s) => s.loginAttempts.recordFailure('a1', now))).toBe(1);
      expect(await work((s) => s.loginAttempts.recordFailure('a1', now))).toBe(2);
      await work((s) => s.loginAttempts.reset('a1'));
      expect(await work((s) => s.loginAttempts.recordFailure('a1', now))).toBe(1);

      await work((s) =>
        s.traces.put({ identityId: 'i2', enabled: true, traceId: 't', until: now, channels: ['x'], updatedAt: now }),
      );
      await work((s) =>
        s.traces.put({ identityId: 'i2', enabled: false, traceId: null, until: null, channels: [], updatedAt: now }),
      );
      expect(await work((s) => s.traces.get('i2'))).toMatchObject({ enabled: false, traceId: null, channels: [] });
      expect(await work((s) => s.identities.idsByAuthPolicy('default'))).toEqual(expect.arrayContaining(['i1', 'i2']));
      expect((await work((s) => s.identities.findByExternalId('ext-i2')))!.id).toBe('i2');
      // Deleting the identity takes its MFA, traces and counters with it.
      await work((s) => s.identities.delete('i2'));
      expect(await work((s) => s.traces.get('i2'))).toBeNull();
    });

    it('identity views: one read of an identity with its policy name, authenticators, verified MFA and enrollment flag; lists with their total', async () => {
      const { work, database } = await bed();
      const now = new Date();
      await work(async (s) => {
        for (const [k, attrs] of [
          ['v1', ['x', 'y']],
          ['v2', ['x']],
          ['v3', []],
        ] as const)
          await s.identities.insert({
            ...identity(k),
            roleAttributes: [...attrs],
            tags: { k },
            appData: { n: 1 },
            createdAt: now,
            updatedAt: now,
          });
        const auth = { passwordHash: null, salt: null, certPem: null, tags: {}, createdAt: now, updatedAt: now };
        await s.authenticators.insert({
          ...auth,
          id: 'va1',
          identityId: 'v1',
          method: 'updb',
          username: 'v1-user',
          certFingerprint: null,
        });
        await s.authenticators.insert({
          ...auth,
          id: 'va2',
          identityId: 'v1',
          method: 'cert',
          username: null,
          certFingerprint: 'ab:cd',
          createdAt: new Date(now.getTime() + 1),
        });
        await s.mfa.insert(storedMfa('vm1', 'v1', true, now));
        await s.mfa.insert(storedMfa('vm2', 'v2', false, now));
      });
      const enrollments = new PgOutstandingEnrollments(database.db);
      await enrollments.apply({ id: 'e1', identityId: 'v2', expiresAt: now.toISOString() }, 1, false);
      await enrollments.apply({ id: 'e2', identityId: 'v3', expiresAt: now.toISOString() }, 2, true);

      const v1 = await work((s) => s.identities.getView('v1'));
      expect(v1).toEqual({
        identity: await work((s) => s.identities.get('v1')),
        authPolicyName: 'Default',
        authenticators: [
          { id: 'va1', method: 'updb', username: 'v1-user', certFingerprint: null },
          { id: 'va2', method: 'cert', username: null, certFingerprint: 'ab:cd' },
        ],
        isMfaEnabled: true,
        hasOutstandingEnrollment: false,
      });
      expect(v1!.identity).toMatchObject({ name: 'name-v1', roleAttributes: ['x', 'y'], tags: { k: 'v1' } });
      expect(v1!.identity.createdAt.getTime()).toBe(now.getTime());
      expect(await work((s) => s.identities.getView('v2'))).toMatchObject({
        authenticators: [],
        isMfaEnabled: false,
        hasOutstandingEnrollment: true,
      });
      // A tombstoned enrollment is no outstanding enrollment.
      expect((await work((s) => s.identities.getView('v3')))!.hasOutstandingEnrollment).toBe(false);
      expect(await work((s) => s.identities.getView('nobody'))).toBeNull();
      // Several at once: the same views, those that exist.
      const many = await work((s) => s.identities.getViews(['v3', 'nobody', 'v1', 'v3']));
      expect(new Map(many.map((v) => [v.identity.id, v]))).toEqual(
        new Map([
          ['v1', v1],
          ['v3', await work((s) => s.identities.getView('v3'))],
        ]),
      );
      expect(await work((s) => s.identities.getViews([]))).toEqual([]);
      expect((await work((s) => s.identities.getMany(['v1', 'nobody', 'v3', 'v1']))).map((i) => i.id).sort()).toEqual([
        'v1',
        'v3',
      ]);
      // The states auth publishes, page by page in bytewise id order (the seeded admin is one too).
      const all = (await work((s) => s.identities.list({ filter: 'true limit none' }))).items.map((i) => i.id);
      const bytewise = [...all].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1));
      const pageIds = (after: string | undefined, limit: number, ids?: string[]) =>
        work((s) => s.identities.page(after, limit, ids)).then((p) => p.map((i) => i.id));
      expect(await pageIds(undefined, 2)).toEqual(bytewise.slice(0, 2));
      expect(await pageIds(bytewise[1], 500)).toEqual(bytewise.slice(2));
      expect((await pageIds(undefined, 500, ['v3', 'nobody', 'v1'])).sort()).toEqual(['v1', 'v3']);
      expect(await pageIds(undefined, 500, [])).toEqual([]);
      expect((await work((s) => s.identities.page(undefined, 500, ['v1'])))[0]).toEqual(
        await work((s) => s.identities.get('v1')),
      );

      const list = (filter: string, roles?: string[]) =>
        work((s) => s.identities.listViews({ filter }, roles ? { roles, semantic: 'AnyOf' } : undefined)).then((p) => ({
          ids: p.items.map((v) => v.identity.id),
          total: p.totalCount,
          pagination: p.pagination,
        }));
      // The seeded admin is an identity too: 4 in all.
      expect(await list('true')).toMatchObject({ total: 4, pagination: { limit: 10, offset: 0 } });
      expect(await list('name contains "name-v" sort by name desc')).toEqual({
        ids: ['v3', 'v2', 'v1'],
        total: 3,
        pagination: { limit: 10, offset: 0 },
      });
      // A full first page, a later page, a page past the end: the total is a count of the matches.
      expect(await list('name contains "name-v" sort by id limit 2')).toMatchObject({ ids: ['v1', 'v2'], total: 3 });
      expect(await list('name contains "name-v" sort by id skip 2 limit 2')).toMatchObject({ ids: ['v3'], total: 3 });
      expect(await list('name contains "name-v" sort by id skip 5 limit 2')).toMatchObject({ ids: [], total: 3 });
      // A later page keeps the list's order, whatever columns the page keeps.
      expect(await list('name contains "name-v" sort by name desc skip 1 limit 2')).toMatchObject({
        ids: ['v2', 'v1'],
        total: 3,
      });
      expect(await list('name = "none"')).toMatchObject({ ids: [], total: 0 });
      expect(await list('name contains "name-v" sort by id limit none')).toMatchObject({
        ids: ['v1', 'v2', 'v3'],
        total: 3,
      });
      expect(await list('true', ['#x', '@v3'])).toMatchObject({ ids: ['v1', 'v2', 'v3'], total: 3 });
      expect(await list('anyOf(roleAttributes) = "y"')).toMatchObject({ ids: ['v1'], total: 1 });
      const listed = await work((s) => s.identities.listViews({ filter: 'id = "v1"' }));
      expect(listed.items[0]).toEqual(v1);
      expect(listed.filterableFields).toContain('roleAttributes');
    });
  });
}
