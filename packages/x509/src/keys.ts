/**
 * Key handling: generation, import of operator-supplied PEM keys, algorithm selection.
 *
 * Key choice: ECDSA P-256 for everything this controller generates (root, intermediate, server keys).
 * It is what the OpenZiti quickstart PKI and the SDKs use, every TLS stack and SDK verifies it, it
 * gives ~128-bit security with small certificates and fast signatures, and it makes the enrollment JWT
 * `ES256` (ZITI-FACTS §8.1). Operator-supplied signers may be EC P-256/P-384/P-521 or RSA (≥ 2048).
 */
import 'reflect-metadata';
import { createPrivateKey, type KeyObject, webcrypto } from 'node:crypto';
import type { X509Certificate } from '@peculiar/x509';
import { encodePem, toArrayBuffer } from './der.ts';

export type CryptoKey = webcrypto.CryptoKey;
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

export type CurveName = 'P-256' | 'P-384' | 'P-521';

/** The webcrypto parameters used to sign with a given key. */
export type SigningAlgorithm =
  | { name: 'ECDSA'; hash: 'SHA-256' | 'SHA-384' | 'SHA-512' }
  | { name: 'RSASSA-PKCS1-v1_5'; hash: 'SHA-256' }
  | { name: 'Ed25519' };

export const GENERATED_KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;

const CURVE_HASH: Record<CurveName, 'SHA-256' | 'SHA-384' | 'SHA-512'> = {
  'P-256': 'SHA-256',
  'P-384': 'SHA-384',
  'P-521': 'SHA-512',
};

const NODE_CURVES: Record<string, CurveName> = {
  prime256v1: 'P-256',
  'P-256': 'P-256',
  secp384r1: 'P-384',
  'P-384': 'P-384',
  secp521r1: 'P-521',
  'P-521': 'P-521',
};

export function subtle(): webcrypto.SubtleCrypto {
  return webcrypto.subtle;
}

export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return (await subtle().generateKey(GENERATED_KEY_ALGORITHM, true, ['sign', 'verify'])) as CryptoKeyPair;
}

export async function exportPkcs8Pem(key: CryptoKey): Promise<string> {
  return encodePem('PRIVATE KEY', await subtle().exportKey('pkcs8', key));
}

/** Key description as webcrypto sees it. */
export type KeyDescription =
  { kind: 'ec'; curve: CurveName } | { kind: 'rsa'; modulusLength: number } | { kind: 'ed25519' };

export function signingAlgorithmFor(key: KeyDescription): SigningAlgorithm {
  switch (key.kind) {
    case 'ec':
      return { name: 'ECDSA', hash: CURVE_HASH[key.curve] };
    case 'rsa':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    case 'ed25519':
      return { name: 'Ed25519' };
  }
}

function importParams(
  key: KeyDescription,
): webcrypto.AlgorithmIdentifier | webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams {
  switch (key.kind) {
    case 'ec':
      return { name: 'ECDSA', namedCurve: key.curve };
    case 'rsa':
      return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
    case 'ed25519':
      return { name: 'Ed25519' };
  }
}

/** Describes the public key of a certificate (or CSR), or undefined for unsupported algorithms. */
export function describePublicKey(alg: {
  name: string;
  namedCurve?: string;
  modulusLength?: number;
}): KeyDescription | undefined {
  if (alg.name === 'ECDSA' || alg.name === 'ECDH') {
    const curve = NODE_CURVES[alg.namedCurve ?? ''];
    return curve ? { kind: 'ec', curve } : undefined;
  }
  if (alg.name === 'RSASSA-PKCS1-v1_5' || alg.name === 'RSA-PSS' || alg.name === 'RSA-OAEP') {
    return { kind: 'rsa', modulusLength: alg.modulusLength ?? 0 };
  }
  if (alg.name === 'Ed25519') return { kind: 'ed25519' };
  return undefined;
}

function describeKeyObject(key: KeyObject): KeyDescription | undefined {
  const details = key.asymmetricKeyDetails ?? {};
  switch (key.asymmetricKeyType) {
    case 'ec': {
      const curve = NODE_CURVES[details.namedCurve ?? ''];
      return curve ? { kind: 'ec', curve } : undefined;
    }
    case 'rsa':
      return { kind: 'rsa', modulusLength: details.modulusLength ?? 0 };
    case 'ed25519':
      return { kind: 'ed25519' };
    default:
      return undefined;
  }
}

export interface ImportedPrivateKey {
  readonly key: CryptoKey;
  readonly description: KeyDescription;
  readonly signingAlgorithm: SigningAlgorithm;
  /** The key re-encoded as PKCS#8 PEM. */
  readonly pkcs8Pem: string;
}

/**
 * Imports a PEM private key: PKCS#8 (`PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`),
 * or encrypted PKCS#8 with `passphrase`. Throws `Error` with a reason on anything else.
 */
export async function importPrivateKeyPem(pem: string, passphrase?: string): Promise<ImportedPrivateKey> {
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(
      passphrase === undefined ? { key: pem, format: 'pem' } : { key: pem, format: 'pem', passphrase },
    );
  } catch (err) {
    throw new Error(`the private key could not be read: ${(err as Error).message}`);
  }
  const description = describeKeyObject(keyObject);
  if (!description) {
    throw new Error(`unsupported private key type ${keyObject.asymmetricKeyType ?? 'unknown'}`);
  }
  if (description.kind === 'rsa' && description.modulusLength < 2048) {
    throw new Error(`RSA keys must have at least 2048 bits (got ${description.modulusLength})`);
  }
  const pkcs8 = new Uint8Array(keyObject.export({ type: 'pkcs8', format: 'der' }));
  const key = await subtle().importKey('pkcs8', toArrayBuffer(pkcs8), importParams(description), false, ['sign']);
  return {
    key,
    description,
    signingAlgorithm: signingAlgorithmFor(description),
    pkcs8Pem: encodePem('PRIVATE KEY', pkcs8),
  };
}

/** True when `privateKey` is the private half of the certificate's public key (sign/verify probe). */
export async function keyMatchesCertificate(
  privateKey: CryptoKey,
  signingAlgorithm: SigningAlgorithm,
  cert: X509Certificate,
): Promise<boolean> {
  const probe = webcrypto.getRandomValues(new Uint8Array(32));
  try {
    const signature = await subtle().sign(signingAlgorithm, privateKey, probe);
    const publicKey = await cert.publicKey.export({ ...cert.publicKey.algorithm, ...signingAlgorithm }, ['verify']);
    return await subtle().verify(signingAlgorithm, publicKey, signature, probe);
  } catch {
    return false;
  }
}
