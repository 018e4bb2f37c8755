import { SecretBox } from '@ziti/platform';
import type { BatchedAuthenticationAttempts } from '../authentication-attempts/authentication-attempts.store.ts';
import type { AuthCore } from '../shared/core.wiring.ts';
import { MfaService } from './mfas.domain.ts';
import { OtplibTotp, PngQrCodes } from './otplib-totp.adapter.ts';

/** TOTP MFA: its secrets and recovery codes sealed at rest under `ZITI_SECRET_KEY` (and the keys it replaced). */
export const mfasWiring = (
  core: AuthCore,
  d: {
    secretKey: string;
    previousSecretKeys?: string[];
    totpIssuer?: string;
    attempts: BatchedAuthenticationAttempts;
  },
) =>
  new MfaService(
    core.work,
    core.sessions,
    new OtplibTotp(),
    new PngQrCodes(),
    new SecretBox(d.secretKey, { previousSecrets: d.previousSecretKeys ?? [] }),
    { issuer: d.totpIssuer ?? 'openziti.io', sessionTtlSeconds: core.ttl, attempts: d.attempts },
  );
