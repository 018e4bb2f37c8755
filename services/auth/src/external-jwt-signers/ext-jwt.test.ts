import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JoseSignerKeys } from './jose-signer-keys.adapter.ts';
import { ExtJwtRejected, type SignerKeys, verifyExternalJwt } from './external-jwt.domain.ts';
import { type ExternalJwtSigner, applySignerInput } from './external-jwt-signer.domain.ts';
import {
  JwksServer,
  type SigningKey,
  certificateFor,
  newSigningKey,
  signToken,
} from '../../test/authentication/jwt-kit.ts';

const now = () => new Date();

function signer(overrides: Partial<ExternalJwtSigner>): ExternalJwtSigner {
  return {
    id: 'signer1',
    name: 'signer',
    enabled: true,
    issuer: 'https://idp.example',
    audience: 'ziti',
    certPem: null,
    fingerprint: null,
    commonName: null,
    notBefore: null,
    notAfter: null,
    kid: null,
    jwksEndpoint: null,
    claimsProperty: null,
    useExternalId: false,
    externalAuthUrl: null,
    clientId: null,
    scopes: [],
    tags: {},
    createdAt: new Date(),
    updatedAt: new Date(),
    ...overrides,
  };
}

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ExtJwtRejected) return err.reason;
    throw err;
  }
  return 'ACCEPTED';
}

describe('external JWT rules (seed §5.1) with a certificate signer', () => {
  let key: SigningKey;
  let other: SigningKey;
  let certSigner: ExternalJwtSigner;
  const keys = new JoseSignerKeys();
  const find = (s: ExternalJwtSigner) => async (iss: string) => (iss === s.issuer ? s : null);

  beforeAll(async () => {
    key = await newSigningKey('cert-kid', 'RS256');
    other = await newSigningKey('cert-kid', 'RS256');
    certSigner = signer({ certPem: await certificateFor(key, 'idp'), kid: 'cert-kid' });
  });

  const good = (o: Parameters<typeof signToken>[1] = {}) =>
    signToken(key, { issuer: certSigner.issuer, audience: 'ziti', subject: 'id-1', ...o });

  it('accepts a token meeting all six rules and answers the subject claim and expiry', async () => {
    const v = await verifyExternalJwt(await good(), find(certSigner), keys, now());
    expect(v.signer.id).toBe('signer1');
    expect(v.claim).toBe('id-1');
    expect(v.expiresAt.getTime()).toBeGreaterThan(Date.now());
  });

  it('rule 1: the issuer must name an enabled signer', async () => {
    expect(
      await reason(verifyExternalJwt(await good({ issuer: 'https://other.example' }), find(certSigner), keys, now())),
    ).toBe('UNKNOWN_ISSUER');
    expect(await reason(verifyExternalJwt(await good({ issuer: undefined }), find(certSigner), keys, now()))).toBe(
      'UNKNOWN_ISSUER',
    );
    const disabled = { ...certSigner, enabled: false };
    expect(await reason(verifyExternalJwt(await good(), find(disabled), keys, now()))).toBe('UNKNOWN_ISSUER');
  });

  it('rule 2: the audience must be the signer audience (a list containing it counts); no audience on the signer skips the check', async () => {
    expect(
      await reason(verifyExternalJwt(await good({ audience: 'someone-else' }), find(certSigner), keys, now())),
    ).toBe('AUDIENCE');
    expect(await reason(verifyExternalJwt(await good({ audience: undefined }), find(certSigner), keys, now()))).toBe(
      'AUDIENCE',
    );
    expect(
      await reason(verifyExternalJwt(await good({ audience: ['x', 'ziti'] }), find(certSigner), keys, now())),
    ).toBe('ACCEPTED');
    const open = { ...certSigner, audience: null };
    expect(await reason(verifyExternalJwt(await good({ audience: 'anything' }), find(open), keys, now()))).toBe(
      'ACCEPTED',
    );
  });

  it('rule 3: the claims property (default sub) must hold a string', async () => {
    expect(await reason(verifyExternalJwt(await good({ subject: undefined }), find(certSigner), keys, now()))).toBe(
      'CLAIM',
    );
    const byEmail = { ...certSigner, claimsProperty: 'email' };
    expect(await reason(verifyExternalJwt(await good(), find(byEmail), keys, now()))).toBe('CLAIM');
    const v = await verifyExternalJwt(await good({ claims: { email: 'a@b.c' } }), find(byEmail), keys, now());
    expect(v.claim).toBe('a@b.c');
    expect(await reason(verifyExternalJwt(await good({ claims: { email: 42 } }), find(byEmail), keys, now()))).toBe(
      'CLAIM',
    );
  });

  it('rule 4: the signature must verify with the certificate', async () => {
    const forged = await signToken(other, { issuer: certSigner.issuer, audience: 'ziti', subject: 'id-1' });
    expect(await reason(verifyExternalJwt(forged, find(certSigner), keys, now()))).toBe('SIGNATURE');
    const token = await good();
    const [h, p] = token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'admin' })).toString('base64url')}.${token.split('.')[2]}`;
    expect(await reason(verifyExternalJwt(tampered, find(certSigner), keys, now()))).toBe('SIGNATURE');
  });

  it('rule 5: the kid must be the signer kid, and present', async () => {
    expect(await reason(verifyExternalJwt(await good({ kid: 'another-kid' }), find(certSigner), keys, now()))).toBe(
      'KID',
    );
    expect(await reason(verifyExternalJwt(await good({ kid: null }), find(certSigner), keys, now()))).toBe('NO_KID');
  });

  it('rule 6: the token must carry an expiry that has not passed, and be past its nbf', async () => {
    expect(await reason(verifyExternalJwt(await good({ expiresIn: -60 }), find(certSigner), keys, now()))).toBe(
      'EXPIRED',
    );
    expect(await reason(verifyExternalJwt(await good({ expiresIn: null }), find(certSigner), keys, now()))).toBe(
      'EXPIRED',
    );
    expect(await reason(verifyExternalJwt(await good({ notBefore: 600 }), find(certSigner), keys, now()))).toBe(
      'NOT_YET_VALID',
    );
  });

  it('refuses malformed tokens, unsigned and HMAC tokens', async () => {
    expect(await reason(verifyExternalJwt('not.a.jwt', find(certSigner), keys, now()))).toBe('MALFORMED');
    const header = (alg: string) => Buffer.from(JSON.stringify({ alg, kid: 'cert-kid' })).toString('base64url');
    const payload = Buffer.from(
      JSON.stringify({ iss: certSigner.issuer, aud: 'ziti', sub: 'id-1', exp: Math.floor(Date.now() / 1000) + 60 }),
    ).toString('base64url');
    expect(await reason(verifyExternalJwt(`${header('none')}.${payload}.`, find(certSigner), keys, now()))).toBe(
      'ALGORITHM',
    );
    expect(await reason(verifyExternalJwt(`${header('HS256')}.${payload}.c2ln`, find(certSigner), keys, now()))).toBe(
      'ALGORITHM',
    );
  });
});

describe('external JWT rules with a JWKS signer, and JWKS caching', () => {
  const server = new JwksServer();
  let url: string;
  let first: SigningKey;
  let second: SigningKey;

  beforeAll(async () => {
    url = await server.start();
    first = await newSigningKey('k1');
    second = await newSigningKey('k2', 'RS256');
  });
  afterAll(() => server.close());

  it('verifies with a JWKS key, caches the set, and fetches again on an unknown kid (rotation)', async () => {
    const keys = new JoseSignerKeys({ refetchCooldownMs: 0 });
    const s = signer({ jwksEndpoint: url });
    const find = async (iss: string) => (iss === s.issuer ? s : null);
    server.serve(first);
    const before = server.fetches;
    const t1 = await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'id-1' });
    expect((await verifyExternalJwt(t1, find, keys, now())).claim).toBe('id-1');
    expect((await verifyExternalJwt(t1, find, keys, now())).claim).toBe('id-1');
    expect(server.fetches - before).toBe(1);

    // The IdP rotates: k1 is gone, k2 signs.
    server.serve(second);
    const t2 = await signToken(second, { issuer: s.issuer, audience: 'ziti', subject: 'id-2' });
    expect((await verifyExternalJwt(t2, find, keys, now())).claim).toBe('id-2');
    expect(server.fetches - before).toBe(2);
  });

  it('rule 5 for JWKS signers: a kid the JWKS does not have is refused (after one refetch)', async () => {
    const keys = new JoseSignerKeys({ refetchCooldownMs: 0 });
    const s = signer({ jwksEndpoint: url });
    server.serve(first);
    const unknown = await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'id-1', kid: 'nope' });
    expect(await reason(verifyExternalJwt(unknown, async () => s, keys, now()))).toBe('KID');
  });

  it('an unknown kid within the cooldown does not fetch the JWKS again', async () => {
    const keys = new JoseSignerKeys({ refetchCooldownMs: 60_000 });
    const s = signer({ jwksEndpoint: url });
    server.serve(first);
    const before = server.fetches;
    await verifyExternalJwt(
      await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'x' }),
      async () => s,
      keys,
      now(),
    );
    for (let i = 0; i < 5; i++) {
      const t = await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'x', kid: `made-up-${i}` });
      expect(await reason(verifyExternalJwt(t, async () => s, keys, now()))).toBe('KID');
    }
    expect(server.fetches - before).toBe(1);
  });

  it('a JWKS endpoint that does not answer makes the token unverifiable, not accepted', async () => {
    const keys = new JoseSignerKeys({ timeoutMs: 500 });
    const s = signer({ jwksEndpoint: 'http://127.0.0.1:9/jwks.json' });
    const t = await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'x' });
    expect(await reason(verifyExternalJwt(t, async () => s, keys, now()))).toBe('KEYS_UNAVAILABLE');
  });

  it('a fake key source shows the domain asks for the header kid and alg', async () => {
    const asked: unknown[] = [];
    const fake: SignerKeys = {
      certificateKey: async () => {
        throw new Error('not used');
      },
      jwksKey: async (_s, header) => {
        asked.push(header);
        return first.publicKey;
      },
    };
    const s = signer({ jwksEndpoint: 'https://idp.example/jwks' });
    await verifyExternalJwt(
      await signToken(first, { issuer: s.issuer, audience: 'ziti', subject: 'x' }),
      async () => s,
      fake,
      now(),
    );
    expect(asked).toEqual([{ kid: 'k1', alg: 'ES256' }]);
  });
});

describe('signer definitions', () => {
  const blank = signer({ name: '', issuer: '' });

  it('needs a certificate with its kid, or a JWKS endpoint, not both', async () => {
    const key = await newSigningKey('k', 'ES256');
    const certPem = await certificateFor(key, 'my-idp');
    const withCert = applySignerInput(
      blank,
      { name: 'a', issuer: 'i', enabled: true, audience: 'x', certPem, kid: 'k' },
      'create',
    );
    expect(withCert.fingerprint).toMatch(/^[0-9a-f]{40}$/);
    expect(withCert.commonName).toBe('my-idp');
    expect(withCert.notAfter!.getTime()).toBeGreaterThan(Date.now());
    const fieldOf = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as { cause?: { field?: string } }).cause?.field;
      }
      return 'ok';
    };
    expect(fieldOf(() => applySignerInput(blank, { name: 'a', issuer: 'i', certPem }, 'create'))).toBe('kid');
    expect(fieldOf(() => applySignerInput(blank, { name: 'a', issuer: 'i' }, 'create'))).toBe('certPem');
    expect(
      fieldOf(() =>
        applySignerInput(
          blank,
          { name: 'a', issuer: 'i', certPem, kid: 'k', jwksEndpoint: 'https://x/jwks' },
          'create',
        ),
      ),
    ).toBe('jwksEndpoint');
    expect(
      fieldOf(() => applySignerInput(blank, { name: 'a', issuer: 'i', certPem: 'garbage', kid: 'k' }, 'create')),
    ).toBe('certPem');
    expect(
      fieldOf(() => applySignerInput(blank, { name: 'a', issuer: 'i', jwksEndpoint: 'ftp://x/jwks' }, 'create')),
    ).toBe('jwksEndpoint');
    expect(
      fieldOf(() =>
        applySignerInput(
          blank,
          { name: 'a', issuer: 'i', jwksEndpoint: 'https://x/jwks', externalAuthUrl: 'nope' },
          'create',
        ),
      ),
    ).toBe('externalAuthUrl');
    expect(
      fieldOf(() => applySignerInput(blank, { name: '', issuer: 'i', jwksEndpoint: 'https://x/jwks' }, 'create')),
    ).toBe('name');
    expect(
      fieldOf(() => applySignerInput(blank, { name: 'a', issuer: ' ', jwksEndpoint: 'https://x/jwks' }, 'create')),
    ).toBe('issuer');
  });

  it('patch keeps omitted fields and clears nulls; switching to JWKS drops the certificate facts', async () => {
    const key = await newSigningKey('k', 'ES256');
    const certPem = await certificateFor(key, 'idp');
    const s = applySignerInput(
      blank,
      { name: 'a', issuer: 'i', certPem, kid: 'k', externalAuthUrl: 'https://login.example', claimsProperty: 'email' },
      'create',
    );
    const patched = applySignerInput(s, { claimsProperty: null }, 'patch');
    expect(patched.externalAuthUrl).toBe('https://login.example');
    expect(patched.claimsProperty).toBeNull();
    const jwks = applySignerInput(s, { certPem: null, jwksEndpoint: 'https://idp/jwks' }, 'patch');
    expect(jwks.fingerprint).toBeNull();
    expect(jwks.kid).toBe('k');
  });
});
