import { readFileSync } from 'node:fs';
import { env, readEnv } from '@ziti/platform';

export interface PkiConfig {
  secretKey: string;
  advertisedAddress: string;
  suppliedSigner?: { certPem: string; keyPem: string };
  serverCertValidityDays: number;
  /** Validity of certificates issued to identities (ott enrollment, extension). */
  identityCertValidityDays: number;
  /** Lifetime of enrollments created with an identity. */
  enrollmentDurationMinutes: number;
}

export function readPkiConfig(source: NodeJS.ProcessEnv = process.env): PkiConfig {
  const raw = readEnv(
    {
      ZITI_SECRET_KEY: env.secret(32),
      ZITI_ADVERTISED_ADDRESS: env.optional(),
      ZITI_PORT: env.int(1280, 0, 65535),
      ZITI_PKI_SIGNER_CERT_FILE: env.optional(),
      ZITI_PKI_SIGNER_KEY_FILE: env.optional(),
      ZITI_SERVER_CERT_DAYS: env.int(365, 1, 3650),
      ZITI_IDENTITY_CERT_DAYS: env.int(365, 1, 3650),
      // The reference's minimum is 5 minutes (ZITI-FACTS §8.1).
      ZITI_ENROLLMENT_DURATION_MINUTES: env.int(180, 5, 525_600),
    },
    source,
  );
  if (Boolean(raw.ZITI_PKI_SIGNER_CERT_FILE) !== Boolean(raw.ZITI_PKI_SIGNER_KEY_FILE)) {
    throw new Error('ZITI_PKI_SIGNER_CERT_FILE and ZITI_PKI_SIGNER_KEY_FILE go together');
  }
  return {
    secretKey: raw.ZITI_SECRET_KEY,
    advertisedAddress: raw.ZITI_ADVERTISED_ADDRESS ?? `localhost:${raw.ZITI_PORT}`,
    serverCertValidityDays: raw.ZITI_SERVER_CERT_DAYS,
    identityCertValidityDays: raw.ZITI_IDENTITY_CERT_DAYS,
    enrollmentDurationMinutes: raw.ZITI_ENROLLMENT_DURATION_MINUTES,
    ...(raw.ZITI_PKI_SIGNER_CERT_FILE && raw.ZITI_PKI_SIGNER_KEY_FILE
      ? {
          suppliedSigner: {
            certPem: readFileSync(raw.ZITI_PKI_SIGNER_CERT_FILE, 'utf8'),
            keyPem: readFileSync(raw.ZITI_PKI_SIGNER_KEY_FILE, 'utf8'),
          },
        }
      : {}),
  };
}
