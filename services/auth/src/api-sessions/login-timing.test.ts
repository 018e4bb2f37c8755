import { ApiError } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoseSignerKeys } from '../external-jwt-signers/jose-signer-keys.adapter.ts';
import { AuthenticationService } from './authentication.domain.ts';
import { AuthenticatorService } from '../authenticators/authenticators.domain.ts';
import { IdentityService } from '../identities/identities.domain.ts';
import type { PasswordHasher } from '../passwords/passwords.ports.ts';
import { PgApiSessionQuery } from './api-sessions.store.ts';
import { RecordedAttempts, authTestBed, plainHasher, seed } from '../../test/authentication/support.ts';

/** These tests register no certificate of an unknown CA (authentication.test.ts covers the refusal). */
const vouching = { vouchesFor: async () => true };

/**
 * User enumeration by timing (issue 12 item 13): a login with an unknown username runs the same
 * password verification as one with a known username and a wrong password, against a dummy
 * credential made by the same hasher (so with the same argon2 parameters).
 */
type Call = { op: 'hash' | 'verify'; password: string; hash?: string; salt?: string };
const calls: Call[] = [];
const recordingHasher: PasswordHasher = {
  async hash(password) {
    calls.push({ op: 'hash', password });
    return plainHasher.hash(password);
  },
  async verify(password, hash, salt) {
    calls.push({ op: 'verify', password, hash, salt });
    return plainHasher.verify(password, hash, salt);
  },
};

let bed: Awaited<ReturnType<typeof authTestBed>>;
let auth: AuthenticationService;
let known: { username: string; password: string };

beforeAll(async () => {
  bed = await authTestBed();
  await seed(bed.work);
  const identities = new IdentityService(bed.work, bed.sessions, 600);
  const identity = await identities.create({ name: 'timing-user', type: 'User', isAdmin: false });
  known = { username: 'timing-username', password: 'Known-Pass-1' };
  await new AuthenticatorService(bed.work, plainHasher, bed.sessions, vouching).create({
    method: 'updb',
    identityId: identity.id,
    ...known,
  });
  auth = new AuthenticationService({
    work: bed.work,
    sessions: bed.sessions,
    hasher: recordingHasher,
    sessionQuery: new PgApiSessionQuery(bed.database.db),
    sessionTtlSeconds: 600,
    signerKeys: new JoseSignerKeys(),
    certificates: { controllerCaBundle: async () => [], verifyWithPki: async () => null },
    verifyChain: async () => {
      throw new Error('not used');
    },
    lockout: async () => undefined,
    attempts: new RecordedAttempts(),
  });
});
afterAll(() => bed.close());

async function refusedLogin(username: string, password: string): Promise<Call[]> {
  calls.length = 0;
  const err = await auth.authenticate({ method: 'password', username, password, remoteAddress: '127.0.0.1' }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('INVALID_AUTH');
  return [...calls];
}

describe('password login timing', () => {
  it('an unknown username is verified against a dummy credential of the same hasher', async () => {
    const first = await refusedLogin('nobody-by-this-name', 'Guess-Pass-1');
    // The dummy credential is made once by the hasher (same parameters), then verified against.
    expect(first.map((c) => c.op)).toEqual(['hash', 'verify']);
    const dummy = first[1]!;
    expect(dummy.password).toBe('Guess-Pass-1');
    expect(dummy.hash).toBeTruthy();
    expect(dummy.salt).toBeTruthy();

    const again = await refusedLogin('another-unknown-name', 'Other-Pass-1');
    expect(again).toEqual([{ op: 'verify', password: 'Other-Pass-1', hash: dummy.hash, salt: dummy.salt }]);
  });

  it('a known username with a wrong password costs the same single verification', async () => {
    const wrong = await refusedLogin(known.username, 'Wrong-Pass-1');
    expect(wrong.map((c) => c.op)).toEqual(['verify']);
    expect(wrong[0]!.password).toBe('Wrong-Pass-1');
    expect(wrong[0]!.hash).not.toBe((await refusedLogin('still-unknown', 'x-Pass-1'))[0]!.hash);
  });
});
