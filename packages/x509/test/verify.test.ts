import { ApiError, type GenericCause } from '@ziti/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodePem } from '../src/der.ts';
import {
  type ChainFailureReason,
  ChainVerificationError,
  type ControllerPki,
  createControllerPki,
  fingerprint,
  isChainValid,
  issueServerCertificate,
  loadSigner,
  parsePemChain,
  type Signer,
  signCsr,
  verifyChain,
} from '../src/index.ts';
import { makeCsr, OpenSsl } from './helpers.ts';

const ssl = new OpenSsl();
let pki: ControllerPki;
let signer: Signer;
let clientPem: string;
let serverPem: string;

beforeAll(async () => {
  pki = await createControllerPki({ name: 'Verify' });
  signer = await loadSigner({ certPem: pki.chainPem, keyPem: pki.intermediate.keyPem });
  clientPem = await signCsr(signer, (await makeCsr({ name: 'CN=client-1' })).pem, {
    kind: 'client',
    validityDays: 365,
  });
  serverPem = (await issueServerCertificate(signer, { commonName: 'srv', dnsNames: ['srv'], validityDays: 365 }))
    .certPem;
  ssl.file('root.pem', pki.root.certPem);
  ssl.file('inter.pem', pki.intermediate.certPem);
  ssl.file('inter.key', pki.intermediate.keyPem);
});
afterAll(() => ssl.cleanup());

async function expectFailure(promise: Promise<unknown>, reason: ChainFailureReason): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ChainVerificationError);
  expect(err).toBeInstanceOf(ApiError);
  expect((err as ApiError).code).toBe('CERT_FAILED_VALIDATION');
  expect((err as ChainVerificationError).reason).toBe(reason);
  expect(((err as ApiError).cause as GenericCause | undefined)?.code).toBe(reason);
}

/** Signs an openssl CSR with the intermediate via `openssl x509 -req`, with the given extension lines. */
function opensslIssue(
  name: string,
  subj: string,
  ext: string,
  caCert = 'inter.pem',
  caKey = 'inter.key',
  extra: string[] = [],
) {
  ssl.run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key`]);
  ssl.run(['req', '-new', '-key', `${name}.key`, '-subj', subj, '-out', `${name}.csr`]);
  ssl.file(`${name}.ext`, ext);
  ssl.run([
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    caCert,
    '-CAkey',
    caKey,
    '-CAcreateserial',
    '-days',
    '30',
    '-extfile',
    `${name}.ext`,
    '-out',
    `${name}.pem`,
    ...extra,
  ]);
  return ssl.run(['x509', '-in', `${name}.pem`]);
}

describe('verifyChain', () => {
  it('verifies leaf → intermediate → root and reports the path and anchor', async () => {
    const result = await verifyChain(clientPem, [pki.intermediate.certPem], [pki.root.certPem], {
      usage: 'clientAuth',
    });
    expect(result.chain.map((c) => c.subject)).toEqual([
      'CN=client-1',
      'CN=Verify Intermediate CA',
      'CN=Verify Root CA',
    ]);
    expect(result.anchorFingerprint).toBe(fingerprint(pki.root.certPem));
    expect(result.chainPem[0]).toBe(clientPem);
    await expect(
      isChainValid(serverPem, [pki.intermediate.certPem], [pki.root.certPem], { usage: 'serverAuth' }),
    ).resolves.toBe(true);
    // intermediates may come with the leaf (as a TLS peer sends them)
    await expect(verifyChain(clientPem + pki.intermediate.certPem, [], [pki.root.certPem])).resolves.toBeDefined();
  });

  it('accepts a non-root trust anchor (ottca: the CA on record is the intermediate) and a trusted leaf', async () => {
    const r = await verifyChain(clientPem, [], [pki.intermediate.certPem], { usage: 'clientAuth' });
    expect(r.chain).toHaveLength(2);
    expect(r.anchorFingerprint).toBe(fingerprint(pki.intermediate.certPem));
    const self = await verifyChain(serverPem, [], [serverPem]);
    expect(self.chain).toHaveLength(1);
  });

  it('checks extended key usage', async () => {
    await expectFailure(
      verifyChain(clientPem, [pki.intermediate.certPem], [pki.root.certPem], { usage: 'serverAuth' }),
      'INCOMPATIBLE_USAGE',
    );
    await expect(
      isChainValid(clientPem, [pki.intermediate.certPem], [pki.root.certPem], { usage: 'serverAuth' }),
    ).resolves.toBe(false);
  });

  it('fails without the intermediate, with a foreign root, or with a same-named impostor root', async () => {
    await expectFailure(verifyChain(clientPem, [], [pki.root.certPem]), 'UNKNOWN_AUTHORITY');
    const other = await createControllerPki({ name: 'Other' });
    await expectFailure(verifyChain(clientPem, [pki.intermediate.certPem], [other.root.certPem]), 'UNKNOWN_AUTHORITY');
    const impostor = await createControllerPki({ name: 'Verify' });
    await expectFailure(verifyChain(clientPem, [pki.intermediate.certPem], [impostor.root.certPem]), 'BAD_SIGNATURE');
    await expectFailure(verifyChain(clientPem, [impostor.intermediate.certPem], [pki.root.certPem]), 'BAD_SIGNATURE');
  });

  it('checks validity periods at `at`', async () => {
    const args = [clientPem, [pki.intermediate.certPem], [pki.root.certPem]] as const;
    await expectFailure(verifyChain(...args, { at: new Date(Date.now() + 2 * 365 * 86_400_000) }), 'EXPIRED');
    await expectFailure(verifyChain(...args, { at: new Date(Date.now() - 86_400_000) }), 'NOT_YET_VALID');
    // a 10-year leaf (openssl does not clamp) under the 5-year intermediate: the intermediate expires first
    const longLeaf = opensslIssue('long', '/CN=long', 'extendedKeyUsage=clientAuth\n', 'inter.pem', 'inter.key', [
      '-days',
      '3650',
    ]);
    const at = new Date(Date.now() + 6 * 365 * 86_400_000);
    expect(parsePemChain(longLeaf)[0]!.notAfter > at).toBe(true);
    await expectFailure(verifyChain(longLeaf, [pki.intermediate.certPem], [pki.root.certPem], { at }), 'EXPIRED');
    await expect(verifyChain(longLeaf, [pki.intermediate.certPem], [pki.root.certPem], { at })).rejects.toMatchObject({
      cause: { code: 'EXPIRED', message: expect.stringMatching(/^CN=Verify Intermediate CA expired at /) },
    });
  });

  it('enforces pathLen (openssl agrees)', async () => {
    const subCa = opensslIssue(
      'subca',
      '/CN=Sub CA',
      'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n',
    );
    const leaf = opensslIssue('deep', '/CN=deep', 'extendedKeyUsage=clientAuth\n', 'subca.pem', 'subca.key');
    await expectFailure(verifyChain(leaf, [subCa, pki.intermediate.certPem], [pki.root.certPem]), 'PATH_LENGTH');
    expect(
      ssl.tryRun([
        'verify',
        '-CAfile',
        'root.pem',
        '-untrusted',
        ssl.file('both.pem', subCa + pki.intermediate.certPem),
        'deep.pem',
      ]).ok,
    ).toBe(false);
    // trusting the sub CA directly is fine
    await expect(verifyChain(leaf, [], [subCa])).resolves.toBeDefined();
  });

  it('rejects a non-CA issuer and a CA without keyCertSign', async () => {
    const notCa = await issueServerCertificate(signer, { commonName: 'srv2', validityDays: 30 });
    ssl.file('srv2.pem', notCa.certPem);
    ssl.file('srv2.key', notCa.keyPem);
    const underLeaf = opensslIssue(
      'underleaf',
      '/CN=under-leaf',
      'extendedKeyUsage=clientAuth\n',
      'srv2.pem',
      'srv2.key',
    );
    await expectFailure(
      verifyChain(underLeaf, [notCa.certPem, pki.intermediate.certPem], [pki.root.certPem]),
      'NOT_CA',
    );

    ssl.run(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'nks.key']);
    ssl.run([
      'req',
      '-x509',
      '-new',
      '-key',
      'nks.key',
      '-days',
      '30',
      '-subj',
      '/CN=NoKeyCertSign',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,digitalSignature',
      '-out',
      'nks.pem',
    ]);
    const nksLeaf = opensslIssue('nksleaf', '/CN=nks-leaf', 'extendedKeyUsage=clientAuth\n', 'nks.pem', 'nks.key');
    await expectFailure(verifyChain(nksLeaf, [], [ssl.run(['x509', '-in', 'nks.pem'])]), 'KEY_USAGE');
  });

  it('rejects unknown critical extensions and SHA-1 signatures', async () => {
    const critical = opensslIssue('crit', '/CN=crit', 'extendedKeyUsage=clientAuth\n1.2.3.4.5=critical,ASN1:NULL\n');
    await expectFailure(
      verifyChain(critical, [pki.intermediate.certPem], [pki.root.certPem]),
      'UNHANDLED_CRITICAL_EXTENSION',
    );
    const sha1 = opensslIssue('sha1', '/CN=sha1', 'extendedKeyUsage=clientAuth\n', 'inter.pem', 'inter.key', ['-sha1']);
    expect(ssl.text(sha1)).toContain('ecdsa-with-SHA1');
    await expectFailure(verifyChain(sha1, [pki.intermediate.certPem], [pki.root.certPem]), 'INSECURE_ALGORITHM');
    // a plain openssl-issued leaf with the same profile verifies
    const plain = opensslIssue('plain', '/CN=plain', 'extendedKeyUsage=clientAuth\n');
    await expect(
      verifyChain(plain, [pki.intermediate.certPem], [pki.root.certPem], { usage: 'clientAuth' }),
    ).resolves.toBeDefined();
  });

  it('reports malformed input and missing roots', async () => {
    await expectFailure(verifyChain('garbage', [], [pki.root.certPem]), 'MALFORMED');
    await expectFailure(verifyChain('', [], [pki.root.certPem]), 'MALFORMED');
    await expectFailure(verifyChain(clientPem, [], []), 'NO_TRUSTED_ROOTS');
  });
});

describe('fingerprint and parsePemChain', () => {
  it('fingerprint = lower-case hex SHA-1 of the DER (openssl agrees)', () => {
    const out = ssl.run(['x509', '-noout', '-fingerprint', '-sha1', '-in', 'root.pem']);
    const expected = out.trim().split('=')[1]!.replace(/:/g, '').toLowerCase();
    expect(fingerprint(pki.root.certPem)).toBe(expected);
    expect(fingerprint(pki.chainPem)).toBe(fingerprint(pki.intermediate.certPem));
    expect(fingerprint(parsePemChain(pki.root.certPem)[0]!.der)).toBe(expected);
  });

  it('parses bundles like Go: leading text is skipped, trailing garbage and non-certificates are errors', () => {
    const withText = ssl.run(['x509', '-in', 'root.pem', '-text']) + ssl.run(['x509', '-in', 'inter.pem', '-text']);
    expect(parsePemChain(withText).map((c) => c.subject)).toEqual(['CN=Verify Root CA', 'CN=Verify Intermediate CA']);
    expect(parsePemChain(pki.chainPem.replace(/\n/g, '\r\n')).length).toBe(2);
    expect(parsePemChain('  \n')).toEqual([]);
    const code = (text: string) => {
      try {
        parsePemChain(text);
        return 'ok';
      } catch (err) {
        return (err as ApiError).code;
      }
    };
    expect(code('hello')).toBe('COULD_NOT_PARSE_PEM_BLOCK');
    expect(code(`${pki.root.certPem}trailing junk`)).toBe('COULD_NOT_PARSE_PEM_BLOCK');
    expect(code(pki.root.keyPem)).toBe('EXPECTED_PEM_CERTIFICATE');
    expect(code(encodePem('CERTIFICATE', Uint8Array.of(0x30, 0x03, 0x02, 0x01, 0x01)))).toBe(
      'COULD_NOT_PARSE_DER_BLOCK',
    );
  });
});
