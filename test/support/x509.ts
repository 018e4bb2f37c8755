import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import {
  type JsonGeneralNames,
  Pkcs10CertificateRequestGenerator,
  SubjectAlternativeNameExtension,
} from '@peculiar/x509';
import { createControllerPki, loadSigner, signCsr, type Signer } from '@ziti/x509';

/** Key pairs, CSRs and third-party CAs made inside a test (nothing is read from disk). */

export interface TestKeyPair {
  keys: webcrypto.CryptoKeyPair;
  /** PKCS#8 PEM of the private key (for a TLS client). */
  keyPem: string;
}

export interface TestCsr extends TestKeyPair {
  csrPem: string;
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

/** A P-256 key pair and a CSR for `subject` (e.g. `CN=alice`, or `C=US, O=NetFoundry, CN=x` as the SDK sends). */
export async function makeCsr(subject: string, sans?: JsonGeneralNames): Promise<TestCsr> {
  const keys = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'sign',
    'verify',
  ])) as webcrypto.CryptoKeyPair;
  const csr = await Pkcs10CertificateRequestGenerator.create({
    name: subject,
    keys,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: sans ? [new SubjectAlternativeNameExtension(sans)] : [],
  });
  return {
    keys,
    keyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
    csrPem: csr.toString('pem'),
  };
}

/** A third-party CA: a root (what `/cas` gets) and an intermediate that signs its clients. */
export interface TestCa {
  rootPem: string;
  intermediatePem: string;
  /** Signs clients (the intermediate). */
  signer: Signer;
  /** The root itself, which signs the verification certificate. */
  rootSigner: Signer;
  /** A client certificate with its key; `chainPem` = leaf + intermediate, what a TLS client presents. */
  issueClient(
    subject: string,
    options?: { sans?: JsonGeneralNames; validityDays?: number; now?: Date },
  ): Promise<TestClientCert>;
}

export interface TestClientCert extends TestKeyPair {
  certPem: string;
  chainPem: string;
}

/** `createdAt` backdates the CA (to issue certificates that are already expired). */
export async function makeTestCa(name: string, createdAt?: Date): Promise<TestCa> {
  const pki = await createControllerPki({ name, ...(createdAt ? { now: createdAt } : {}) });
  const signer = await loadSigner({
    certPem: pki.chainPem,
    keyPem: pki.intermediate.keyPem,
    ...(createdAt ? { now: createdAt } : {}),
  });
  const rootSigner = await loadSigner({
    certPem: pki.root.certPem,
    keyPem: pki.root.keyPem,
    ...(createdAt ? { now: createdAt } : {}),
  });
  return {
    rootPem: pki.root.certPem,
    intermediatePem: pki.intermediate.certPem,
    signer,
    rootSigner,
    async issueClient(subject, options = {}) {
      const csr = await makeCsr(subject, options.sans);
      // `server` copies the requested SANs and allows clientAuth too; `client` has no SANs.
      const certPem = await signCsr(signer, csr.csrPem, {
        kind: options.sans ? 'server' : 'client',
        validityDays: options.validityDays ?? 30,
        ...(options.now ? { now: options.now } : {}),
      });
      return { keys: csr.keys, keyPem: csr.keyPem, certPem, chainPem: certPem + pki.intermediate.certPem };
    },
  };
}

/** A certificate whose CN is the CA's verification token, signed by the CA's root (ZITI-FACTS §8.3). */
export async function verificationCertificate(ca: TestCa, verificationToken: string): Promise<string> {
  const csr = await makeCsr(`CN=${verificationToken}`);
  return signCsr(ca.rootSigner, csr.csrPem, { kind: 'client', validityDays: 1 });
}
