import { readFileSync } from 'node:fs';
import {
  ConfigProblems,
  env,
  readClusterUrls,
  readEnv,
  readProcessEnv,
  readSecretKeys,
  readServiceEnv,
} from '@ziti/platform';
import { hostOf } from './controller-pki/controller-pki.domain.ts';

/** The environment variable of pki-enrollment's own Postgres database in the cluster. */
export const pkiDatabaseVar = 'PKI_DATABASE_URL';

export interface PkiConfig {
  secretKey: string;
  /** Keys `secretKey` replaced: still opened, never sealed with (`ZITI_SECRET_KEY_PREVIOUS`). */
  previousSecretKeys?: string[];
  advertisedAddress: string;
  /**
   * More names the server certificate is for: the host of `ZITI_CTRL_ADVERTISED_ADDRESS` (the
   * router edge's control port, which routers dial and verify) and `ZITI_SERVER_CERT_NAMES`.
   */
  extraServerNames: string[];
  suppliedSigner?: { certPem: string; keyPem: string };
  serverCertValidityDays: number;
  /** Validity of certificates issued to identities (ott enrollment, extension). */
  identityCertValidityDays: number;
  /** Lifetime of enrollments created with an identity. */
  enrollmentDurationMinutes: number;
}

/** A file the operator names, read now: a problem (not a stack trace) when it cannot be. */
function readOperatorFile(problems: ConfigProblems, name: string, path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problems.add(
      `${name} cannot be read (${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'error')})`,
    );
    return undefined;
  }
}

/** pki-enrollment's settings (the cluster's and `npm start`'s); every problem is reported at once. */
export function readPkiConfig(source: NodeJS.ProcessEnv = process.env): PkiConfig {
  const problems = new ConfigProblems();
  const raw = problems.take(() =>
    readEnv(
      {
        ZITI_ADVERTISED_ADDRESS: env.hostPort(),
        ZITI_CTRL_ADVERTISED_ADDRESS: env.hostPort(),
        ZITI_SERVER_CERT_NAMES: env.optional(),
        ZITI_PORT: env.int(1280, 0, 65535),
        ZITI_SERVER_CERT_DAYS: env.int(365, 1, 3650),
        ZITI_IDENTITY_CERT_DAYS: env.int(365, 1, 3650),
        // The reference's minimum is 5 minutes (ZITI-FACTS §8.1).
        ZITI_ENROLLMENT_DURATION_MINUTES: env.int(180, 5, 525_600),
      },
      source,
    ),
  );
  const keys = problems.take(() => readSecretKeys(source));
  const signer = problems.take(() =>
    readEnv({ ZITI_PKI_SIGNER_CERT_FILE: env.optional(), ZITI_PKI_SIGNER_KEY_FILE: env.optional() }, source),
  );
  let suppliedSigner: { certPem: string; keyPem: string } | undefined;
  if (signer) {
    const certFile = signer.ZITI_PKI_SIGNER_CERT_FILE;
    const keyFile = signer.ZITI_PKI_SIGNER_KEY_FILE;
    if (Boolean(certFile) !== Boolean(keyFile)) {
      problems.add('ZITI_PKI_SIGNER_CERT_FILE and ZITI_PKI_SIGNER_KEY_FILE go together: set both or neither');
    } else if (certFile && keyFile) {
      const certPem = readOperatorFile(problems, 'ZITI_PKI_SIGNER_CERT_FILE', certFile);
      const keyPem = readOperatorFile(problems, 'ZITI_PKI_SIGNER_KEY_FILE', keyFile);
      if (certPem !== undefined && !certPem.includes('-----BEGIN CERTIFICATE-----'))
        problems.add('ZITI_PKI_SIGNER_CERT_FILE holds no PEM certificate');
      if (keyPem !== undefined && !/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(keyPem))
        problems.add('ZITI_PKI_SIGNER_KEY_FILE holds no PEM private key');
      if (certPem !== undefined && keyPem !== undefined) suppliedSigner = { certPem, keyPem };
    }
  }
  problems.done();
  return {
    secretKey: keys!.current,
    previousSecretKeys: keys!.previous,
    advertisedAddress: raw!.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw!.ZITI_PORT}`,
    extraServerNames: [
      ...(raw!.ZITI_CTRL_ADVERTISED_ADDRESS ? [hostOf(raw!.ZITI_CTRL_ADVERTISED_ADDRESS)] : []),
      ...(raw!.ZITI_SERVER_CERT_NAMES ?? '')
        .split(',')
        .map((n) => n.trim())
        .filter((n) => n !== ''),
    ],
    serverCertValidityDays: raw!.ZITI_SERVER_CERT_DAYS,
    identityCertValidityDays: raw!.ZITI_IDENTITY_CERT_DAYS,
    enrollmentDurationMinutes: raw!.ZITI_ENROLLMENT_DURATION_MINUTES,
    ...(suppliedSigner ? { suppliedSigner } : {}),
  };
}

/**
 * Everything a pki-enrollment process reads, checked before it connects to anything: its settings,
 * NATS, its database, logging (`migrate` needs no settings).
 */
export function readPkiProcessConfig(
  source: NodeJS.ProcessEnv = process.env,
  options: { migrateOnly?: boolean } = {},
): PkiConfig {
  const problems = new ConfigProblems();
  problems.take(() => readProcessEnv(source));
  problems.take(() => readServiceEnv(pkiDatabaseVar, source));
  problems.take(() => readClusterUrls(pkiDatabaseVar, source));
  const settings = options.migrateOnly ? undefined : problems.take(() => readPkiConfig(source));
  problems.done();
  return settings!;
}
