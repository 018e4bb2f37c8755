import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Extension,
  type JsonGeneralNames,
  Pkcs10CertificateRequestGenerator,
  SubjectAlternativeNameExtension,
} from '@peculiar/x509';

/** A temp directory with helpers to write files and run the openssl CLI in it. */
export class OpenSsl {
  readonly dir = mkdtempSync(join(tmpdir(), 'pki-test-'));

  file(name: string, content: string | Uint8Array): string {
    const path = join(this.dir, name);
    writeFileSync(path, content);
    return path;
  }

  run(args: string[], input?: string | Uint8Array): string {
    return execFileSync('openssl', args, { cwd: this.dir, encoding: 'utf8', input, stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** Runs and returns {ok, out} without throwing (stdout + stderr). */
  tryRun(args: string[]): { ok: boolean; out: string } {
    try {
      return { ok: true, out: this.run(args) };
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return { ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
    }
  }

  text(certPem: string): string {
    return this.run(['x509', '-noout', '-text', '-nameopt', 'RFC2253'], certPem);
  }

  cleanup(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export interface TestCsr {
  pem: string;
  keys: CryptoKeyPair;
}

const EC_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** A CSR made with webcrypto + Pkcs10CertificateRequestGenerator, optionally with requested SANs. */
export async function makeCsr(options: {
  name: string;
  sans?: JsonGeneralNames;
  algorithm?: EcKeyGenParams | RsaHashedKeyGenParams;
  signingAlgorithm?: Algorithm | EcdsaParams;
}): Promise<TestCsr> {
  const algorithm = options.algorithm ?? EC_P256;
  const keys = (await crypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const extensions: Extension[] = options.sans ? [new SubjectAlternativeNameExtension(options.sans)] : [];
  const csr = await Pkcs10CertificateRequestGenerator.create({
    name: options.name,
    keys,
    signingAlgorithm:
      options.signingAlgorithm ?? (algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : algorithm),
    extensions,
  });
  return { pem: csr.toString('pem'), keys };
}

type EcKeyGenParams = { name: 'ECDSA'; namedCurve: string };
type RsaHashedKeyGenParams = { name: string; modulusLength: number; publicExponent: Uint8Array; hash: string };
type Algorithm = { name: string };
type EcdsaParams = { name: string; hash: string };
type CryptoKeyPair = import('node:crypto').webcrypto.CryptoKeyPair;
