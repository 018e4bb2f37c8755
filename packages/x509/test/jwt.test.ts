import { createPublicKey, verify as nodeVerify } from 'node:crypto';
import { ApiError, type GenericCause } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createControllerPki,
  fingerprint,
  type IssuedCertificate,
  issueServerCertificate,
  loadSigner,
  signEnrollmentJwt,
  verifyEnrollmentJwt,
} from '../src/index.ts';
import { OpenSsl } from './helpers.ts';

const ssl = new OpenSsl();
let server: IssuedCertificate;
let otherServer: IssuedCertificate;

beforeAll(async () => {
  const pki = await createControllerPki({ name: 'JWT' });
  const signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
  server = await issueServerCertificate(signer, { commonName: 'ctrl', dnsNames: ['ctrl.test'], validityDays: 30 });
  otherServer = await issueServerCertificate(signer, { commonName: 'ctrl', dnsNames: ['ctrl.test'], validityDays: 30 });
});
afterAll(() => ssl.cleanup());

function decodePart(part: string): string {
  return Buffer.from(part, 'base64url').toString('utf8');
}

const exp = Math.floor(Date.now() / 1000) + 180 * 60;
const claims = {
  iss: 'https://ctrl.test:1280',
  sub: 'identity-id',
  jti: '2d1f3c7e-2f3b-4c8e-9a31-2ad3a4b6c0d1',
  exp,
  em: 'ott',
};

async function expectInvalid(promise: Promise<unknown>, message?: RegExp) {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('INVALID_ENROLLMENT_TOKEN');
  if (message) expect(((err as ApiError).cause as GenericCause | undefined)?.message).toMatch(message);
}

describe('signEnrollmentJwt', () => {
  it('writes the reference header and claims (ES256, kid = SHA-1 of the server cert, aud [""], no iat/nbf)', async () => {
    const jwt = await signEnrollmentJwt({ serverCertPem: server.chainPem, serverKeyPem: server.keyPem, claims });
    const [h, p, s] = jwt.split('.') as [string, string, string];
    expect(decodePart(h)).toBe(`{"alg":"ES256","kid":"${fingerprint(server.certPem)}","typ":"JWT"}`);
    expect(decodePart(p)).toBe(
      `{"iss":"https://ctrl.test:1280","sub":"identity-id","aud":[""],"exp":${exp},"jti":"${claims.jti}","em":"ott","ctrls":null}`,
    );
    expect(fingerprint(server.certPem)).toMatch(/^[0-9a-f]{40}$/);

    // independent check with node:crypto and the certificate's public key
    const ok = nodeVerify(
      'sha256',
      Buffer.from(`${h}.${p}`),
      { key: createPublicKey(server.certPem), dsaEncoding: 'ieee-p1363' },
      Buffer.from(s, 'base64url'),
    );
    expect(ok).toBe(true);
  });

  it('supports the CA JWT shape (no exp, no aud) and HA controller lists, exp as Date', async () => {
    const caJwt = await signEnrollmentJwt({
      serverCertPem: server.certPem,
      serverKeyPem: server.keyPem,
      claims: { iss: 'https://ctrl.test:1280/', sub: 'caId', jti: 'caId', em: 'ca', aud: null },
    });
    expect(JSON.parse(decodePart(caJwt.split('.')[1]!))).toEqual({
      iss: 'https://ctrl.test:1280/',
      sub: 'caId',
      jti: 'caId',
      em: 'ca',
      ctrls: null,
    });
    const ha = await signEnrollmentJwt({
      serverCertPem: server.certPem,
      serverKeyPem: server.keyPem,
      claims: { ...claims, exp: new Date(exp * 1000 + 999), ctrls: ['https://c1:1280', 'https://c2:1280'] },
    });
    const payload = JSON.parse(decodePart(ha.split('.')[1]!));
    expect(payload.exp).toBe(exp);
    expect(payload.ctrls).toEqual(['https://c1:1280', 'https://c2:1280']);
  });

  it('picks ES384 / RS256 from the certificate key', async () => {
    ssl.run(['ecparam', '-name', 'secp384r1', '-genkey', '-noout', '-out', 'p384.key']);
    ssl.run(['req', '-x509', '-new', '-key', 'p384.key', '-days', '2', '-subj', '/CN=p384', '-out', 'p384.pem']);
    const p384 = {
      serverCertPem: ssl.run(['x509', '-in', 'p384.pem']),
      serverKeyPem: ssl.run(['ec', '-in', 'p384.key']),
    };
    const j384 = await signEnrollmentJwt({ ...p384, claims });
    expect(JSON.parse(decodePart(j384.split('.')[0]!)).alg).toBe('ES384');
    expect((await verifyEnrollmentJwt(j384, p384.serverCertPem)).claims.sub).toBe('identity-id');

    ssl.run(['genrsa', '-out', 'rsa.key', '2048']);
    ssl.run(['req', '-x509', '-new', '-key', 'rsa.key', '-days', '2', '-subj', '/CN=rsa', '-out', 'rsa.pem']);
    const rsa = {
      serverCertPem: ssl.run(['x509', '-in', 'rsa.pem']),
      serverKeyPem: ssl.run(['pkey', '-in', 'rsa.key']),
    };
    const jrsa = await signEnrollmentJwt({ ...rsa, claims });
    expect(JSON.parse(decodePart(jrsa.split('.')[0]!)).alg).toBe('RS256');
    expect((await verifyEnrollmentJwt(jrsa, rsa.serverCertPem)).header.kid).toBe(fingerprint(rsa.serverCertPem));
    // an ES256 token does not verify against an RSA certificate
    const es = await signEnrollmentJwt({ serverCertPem: server.certPem, serverKeyPem: server.keyPem, claims });
    await expectInvalid(verifyEnrollmentJwt(es, rsa.serverCertPem), /algorithm ES256/);
  });

  it('refuses a key that does not belong to the certificate', async () => {
    await expect(
      signEnrollmentJwt({ serverCertPem: server.certPem, serverKeyPem: otherServer.keyPem, claims }),
    ).rejects.toThrow(/does not belong/);
  });
});

describe('verifyEnrollmentJwt', () => {
  it('verifies with the presented server certificate and returns header and claims', async () => {
    const jwt = await signEnrollmentJwt({ serverCertPem: server.certPem, serverKeyPem: server.keyPem, claims });
    const { header, claims: got } = await verifyEnrollmentJwt(`${jwt}\n`, server.chainPem);
    expect(header).toEqual({ alg: 'ES256', kid: fingerprint(server.certPem), typ: 'JWT' });
    expect(got).toEqual({ ...claims, aud: [''], ctrls: null });
  });

  it('fails with a different certificate', async () => {
    const jwt = await signEnrollmentJwt({ serverCertPem: server.certPem, serverKeyPem: server.keyPem, claims });
    await expectInvalid(verifyEnrollmentJwt(jwt, otherServer.certPem), /signature verification failed/);
  });

  it('fails when tampered, expired, malformed or unsigned', async () => {
    const jwt = await signEnrollmentJwt({ serverCertPem: server.certPem, serverKeyPem: server.keyPem, claims });
    const [h, p, s] = jwt.split('.') as [string, string, string];
    const forged = Buffer.from(decodePart(p).replace('identity-id', 'identity-ie')).toString('base64url');
    await expectInvalid(verifyEnrollmentJwt(`${h}.${forged}.${s}`, server.certPem), /signature/);
    await expectInvalid(verifyEnrollmentJwt(jwt, server.certPem, { now: new Date((exp + 1) * 1000) }), /expired/);
    expect((await verifyEnrollmentJwt(jwt, server.certPem, { now: new Date(exp * 1000) })).claims.em).toBe('ott');
    await expectInvalid(verifyEnrollmentJwt('not.a.jwt', server.certPem));
    await expectInvalid(verifyEnrollmentJwt('garbage', server.certPem), /malformed/);
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${p}.`;
    await expectInvalid(verifyEnrollmentJwt(none, server.certPem), /algorithm none/);
    const hs = `${Buffer.from('{"alg":"HS256","typ":"JWT"}').toString('base64url')}.${p}.${s}`;
    await expectInvalid(verifyEnrollmentJwt(hs, server.certPem), /algorithm HS256/);
  });
});
