import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, type OperationDef, subjects } from '@ziti/contracts';
import {
  type ApiSessionRecord,
  type ApiSessionStore,
  type ExtJwtSecondaryRequest,
  InProcessBus,
  type LiveApiSession,
  createLogger,
  extJwtSecondaryCall,
  mfaAuthQuery,
  pendingAuthQueries,
} from '@ziti/platform';
import { afterAll, describe, expect, it } from 'vitest';
import { authenticate } from './edge-auth.transport.ts';
import { ExtJwtSecondaryCheck, bearerToken } from './ext-jwt-secondary.transport.ts';
import { TokenBucketLimiter } from './rate-limit.domain.ts';

const record = (o: Partial<ApiSessionRecord> = {}): LiveApiSession => ({
  id: 's1',
  token: 't',
  identityId: 'i1',
  identityName: 'n',
  isAdmin: false,
  authenticatorId: 'a',
  authMethod: 'password',
  ipAddress: '127.0.0.1',
  configTypes: [],
  isMfaRequired: false,
  isMfaComplete: false,
  tags: {},
  createdAt: new Date().toISOString(),
  updatedAt: new Date().toISOString(),
  lastActivityAt: new Date().toISOString(),
  expiresAt: new Date().toISOString(),
  ...o,
});

describe('pending auth queries (ZITI-FACTS §9.3)', () => {
  it('MFA is pending when (isMfaRequired or requireTotp) and not complete; EXT-JWT when the signer is required and not satisfied', () => {
    expect(pendingAuthQueries(record(), true)).toEqual([]);
    expect(pendingAuthQueries(record({ isMfaRequired: true }), true)).toEqual([mfaAuthQuery]);
    expect(pendingAuthQueries(record({ requireTotp: true }), true)).toEqual([mfaAuthQuery]);
    expect(pendingAuthQueries(record({ isMfaRequired: true, isMfaComplete: true }), true)).toEqual([]);
    const signer = { id: 'sig', externalAuthUrl: 'https://idp/login' };
    expect(pendingAuthQueries(record({ requiredExtJwtSigner: signer }), true)).toEqual([]);
    expect(pendingAuthQueries(record({ requiredExtJwtSigner: signer }), false)).toEqual([
      { typeId: 'EXT-JWT', provider: 'url', id: 'sig', httpUrl: 'https://idp/login' },
    ]);
    expect(
      pendingAuthQueries(
        record({ requiredExtJwtSigner: { id: 'sig', externalAuthUrl: null }, requireTotp: true }),
        false,
      ),
    ).toEqual([mfaAuthQuery, { typeId: 'EXT-JWT', provider: 'url', id: 'sig' }]);
    expect(mfaAuthQuery).toEqual({
      typeId: 'MFA',
      provider: 'ziti',
      httpMethod: 'POST',
      httpUrl: './authenticate/mfa',
      format: 'alphaNumeric',
      minLength: 4,
      maxLength: 6,
    });
  });
});

describe('authentication rate limit', () => {
  it('allows a burst, then refills at the rate, per address; 0 turns it off', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter({ perMinute: 60, burst: 3 }, () => now);
    expect([1, 2, 3].map(() => limiter.take('a').allowed)).toEqual([true, true, true]);
    const refused = limiter.take('a');
    expect(refused).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.take('b').allowed).toBe(true);
    now += 1_000;
    expect(limiter.take('a').allowed).toBe(true);
    expect(limiter.take('a').allowed).toBe(false);
    now += 60_000;
    expect([1, 2, 3, 4].map(() => limiter.take('a').allowed)).toEqual([true, true, true, false]);
    const off = new TokenBucketLimiter({ perMinute: 0, burst: 1 });
    expect(Array.from({ length: 100 }, () => off.take('a').allowed).every(Boolean)).toBe(true);
  });

  it('forgets the least recently used addresses beyond maxKeys (a forgotten one starts full)', () => {
    let now = 0;
    const limiter = new TokenBucketLimiter({ perMinute: 1, burst: 1, maxKeys: 2 }, () => now);
    limiter.take('a');
    limiter.take('b');
    expect(limiter.take('a').allowed).toBe(false);
    limiter.take('c');
    now += 1;
    expect(limiter.take('b').allowed).toBe(true);
  });
});

describe('secondary external JWT check', () => {
  const bus = new InProcessBus();
  const asked: ExtJwtSecondaryRequest[] = [];
  let answer: { valid: boolean; validUntil?: string } = { valid: false };
  bus.serve(subjects.call('auth', extJwtSecondaryCall), 'ziti-auth', async (payload) => {
    asked.push(payload as ExtJwtSecondaryRequest);
    return answer;
  });
  afterAll(() => bus.close());
  const logger = createLogger('test', 'silent');
  const signer = { id: 'sig', externalAuthUrl: null };

  it('sessions without a required signer never ask', async () => {
    const check = new ExtJwtSecondaryCheck(bus, logger);
    expect(await check.satisfied(record(), undefined)).toBe(true);
    expect(asked).toHaveLength(0);
  });

  it('asks auth with the bearer token and reuses a positive answer until validUntil', async () => {
    let now = Date.now();
    const check = new ExtJwtSecondaryCheck(bus, logger, 10, () => now);
    const session = record({ requiredExtJwtSigner: signer });
    expect(await check.satisfied(session, undefined)).toBe(false);
    expect(await check.satisfied(session, 'Basic abc')).toBe(false);
    expect(asked).toHaveLength(0);
    answer = { valid: false };
    expect(await check.satisfied(session, 'Bearer jwt-1')).toBe(false);
    expect(await check.satisfied(session, 'Bearer jwt-1')).toBe(false);
    expect(asked).toHaveLength(2);
    expect(asked[0]).toEqual({ identityId: 'i1', signerId: 'sig', jwt: 'jwt-1' });
    answer = { valid: true, validUntil: new Date(now + 30_000).toISOString() };
    expect(await check.satisfied(session, 'Bearer jwt-2')).toBe(true);
    expect(await check.satisfied(session, 'bearer jwt-2')).toBe(true);
    expect(asked).toHaveLength(3);
    // Another identity with the same token is asked about separately.
    expect(await check.satisfied(record({ identityId: 'i2', requiredExtJwtSigner: signer }), 'Bearer jwt-2')).toBe(
      true,
    );
    expect(asked).toHaveLength(4);
    now += 31_000;
    answer = { valid: false };
    expect(await check.satisfied(session, 'Bearer jwt-2')).toBe(false);
    expect(asked).toHaveLength(5);
  });

  it('an unreachable auth leaves the factor unconfirmed', async () => {
    const lonely = new InProcessBus();
    const check = new ExtJwtSecondaryCheck(lonely, logger);
    expect(await check.satisfied(record({ requiredExtJwtSigner: signer }), 'Bearer x')).toBe(false);
    await lonely.close();
  });

  it('reads bearer tokens only', () => {
    expect(bearerToken('Bearer a.b.c')).toBe('a.b.c');
    expect(bearerToken('bearer   a.b.c ')).toBe('a.b.c');
    expect(bearerToken('Basic xyz')).toBeUndefined();
    expect(bearerToken(undefined)).toBeUndefined();
  });
});

describe('a request without a session', () => {
  const op = { operationId: 'listServices', access: 'authenticated' } as unknown as OperationDef;
  const sessions = { touch: () => Promise.resolve(null) } as unknown as ApiSessionStore;
  const refusal = async (headers: Record<string, string>, url = '/edge/client/v1/services') => {
    const req = { headers, url } as unknown as IncomingMessage;
    const res = { setHeader: () => undefined } as unknown as ServerResponse;
    const err = await authenticate(req, res, op, { sessions, sessionTimeoutSeconds: 1800 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    return (err as ApiError).toJSON();
  };

  it("without any credential carries the reference's go-openapi cause", async () => {
    const none = {
      code: 'UNAUTHORIZED',
      message: new ApiError('UNAUTHORIZED').message,
      cause: { code: 'UNHANDLED', message: 'unauthenticated for invalid credentials' },
    };
    expect(await refusal({})).toEqual(none);
    expect(await refusal({ 'zt-session': '' })).toEqual(none);
    expect(await refusal({ authorization: 'Basic eDp5' })).toEqual(none);
    expect(await refusal({}, '/edge/client/v1/services?access_token=')).toEqual(none);
  });

  it('with a credential that does not hold carries none', async () => {
    for (const [headers, url] of [
      [{ 'zt-session': 'not-a-uuid' }, undefined],
      [{ 'zt-session': '8ef5b8b1-3f8e-4a0b-9d0c-2f0f5f0e8a11' }, undefined],
      [{ authorization: 'Bearer a.b.c' }, undefined],
      [{}, '/edge/client/v1/services?access_token=a.b.c'],
    ] as const) {
      expect(await refusal(headers, url)).toEqual({
        code: 'UNAUTHORIZED',
        message: new ApiError('UNAUTHORIZED').message,
      });
    }
  });
});
