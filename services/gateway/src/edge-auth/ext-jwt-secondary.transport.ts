import { createHash } from 'node:crypto';
import { type ExtJwtSecondaryRequest, type ExtJwtSecondaryResult, authCallContracts } from '@ziti/contracts';
import { type Bus, type LiveApiSession, type Logger, callService } from '@ziti/platform';

/**
 * The per-request check of an auth policy's `secondary.requireExtJwtSigner` (ZITI-FACTS §9.3).
 * Only sessions whose record names a signer pay for it: the bearer token is checked by auth (which
 * owns signers and their keys) and a positive answer is kept until auth's `validUntil`, so a client
 * reusing its JWT costs one bus call per token, not per request. Negative answers are not kept.
 */
export class ExtJwtSecondaryCheck {
  private readonly valid = new Map<string, number>();

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  async satisfied(session: LiveApiSession, authorization: string | undefined): Promise<boolean> {
    const signer = session.requiredExtJwtSigner;
    if (!signer) return true;
    const jwt = bearerToken(authorization);
    if (!jwt) return false;
    const key = createHash('sha256').update(`${signer.id}\0${session.identityId}\0${jwt}`).digest('base64url');
    const until = this.valid.get(key);
    if (until !== undefined) {
      if (until > this.now()) return true;
      this.valid.delete(key);
    }
    const request: ExtJwtSecondaryRequest = { identityId: session.identityId, signerId: signer.id, jwt };
    let result: ExtJwtSecondaryResult;
    try {
      result = await callService(this.bus, 'auth', authCallContracts.verifyExtJwtSecondary, request, {
        timeoutMs: 5_000,
      });
    } catch (err) {
      // Auth unreachable: the factor cannot be confirmed, so the session stays partial.
      this.logger.warn({ err: (err as Error).message }, 'external JWT check failed');
      return false;
    }
    if (!result.valid) return false;
    const expires = result.validUntil ? Date.parse(result.validUntil) : Number.NaN;
    if (Number.isFinite(expires) && expires > this.now()) {
      this.valid.set(key, expires);
      while (this.valid.size > this.maxEntries) {
        const oldest = this.valid.keys().next().value;
        if (oldest === undefined) break;
        this.valid.delete(oldest);
      }
    }
    return true;
  }
}

export function bearerToken(authorization: string | undefined): string | undefined {
  if (!authorization) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return m?.[1];
}
