import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { emitMfa, emitMfaPassed } from '../api-sessions/api-session-events.domain.ts';
import { failureReason } from '../authentication-attempts/authentication-attempts.domain.ts';
import type { AuthenticationAttempts } from '../authentication-attempts/authentication-attempts.ports.ts';
import type { AuthStores, SessionStore, UnitOfWork } from '../shared/stores.ports.ts';
import type { StoredMfa } from './mfas.ports.ts';

/** Port: TOTP as the reference configures it (ZITI-FACTS §9.1). */
export interface Totp {
  /** A new secret: 10 random bytes, base32 (16 upper-case characters, no padding). */
  newSecret(): string;
  /** Whether `code` (6 digits) is the code of `secret` within ±2 steps of 30 s at `now`. */
  verify(secret: string, code: string, now: Date): Promise<boolean>;
}

/** Port: QR code images. */
export interface QrCodes {
  png(text: string): Promise<Buffer>;
}

/** Port: sealing secrets at rest (SecretBox). */
export interface Sealer {
  encrypt(plaintext: string, options: { context: string }): string;
  decryptString(token: string, options: { context: string }): string;
}

/** An identity's MFA as the domain sees it (secrets open). */
export interface MfaRecord {
  id: string;
  identityId: string;
  isVerified: boolean;
  secret: string;
  recoveryCodes: string[];
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export interface MfaOptions {
  /** The TOTP issuer shown by authenticator apps (`edge.totp.hostname`, default `openziti.io`). */
  issuer: string;
  sessionTtlSeconds: number;
  /** Where every `/authenticate/mfa` code check is reported, off its path (docs/adr/0021). */
  attempts: AuthenticationAttempts;
}

const recoveryCodeCount = 20;
const base32Alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** A recovery code: the first 6 characters of base32(8 random bytes) (ZITI-FACTS §9.1). */
export function newRecoveryCode(): string {
  const bytes = randomBytes(8);
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < 6) {
      out += base32Alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

const isTotpShaped = (code: string) => /^\d{6}$/.test(code);

/** Compares `code` with every recovery code in constant time; answers the index of the match or -1. */
function recoveryCodeIndex(codes: string[], code: string): number {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  const wanted = digest(code.trim().toUpperCase());
  let found = -1;
  codes.forEach((c, i) => {
    if (timingSafeEqual(digest(c), wanted) && found < 0) found = i;
  });
  return found;
}

/**
 * MFA (TOTP) of the current identity and its role in authentication (ZITI-FACTS §9): enrollment,
 * verification, QR code, recovery codes, removal, and `POST /authenticate/mfa`, which completes a
 * partially authenticated session. The secret and the recovery codes are sealed at rest, bound to
 * the identity.
 */
export class MfaService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionStore,
    private readonly totp: Totp,
    private readonly qr: QrCodes,
    private readonly sealer: Sealer,
    private readonly options: MfaOptions,
    private readonly now: () => Date = () => new Date(),
  ) {}

  private context(identityId: string): { context: string } {
    return { context: `mfa:${identityId}` };
  }

  private open(stored: StoredMfa): MfaRecord {
    const ctx = this.context(stored.identityId);
    return {
      id: stored.id,
      identityId: stored.identityId,
      isVerified: stored.isVerified,
      secret: this.sealer.decryptString(stored.sealedSecret, ctx),
      recoveryCodes: JSON.parse(this.sealer.decryptString(stored.sealedRecoveryCodes, ctx)) as string[],
      tags: stored.tags,
      createdAt: stored.createdAt,
      updatedAt: stored.updatedAt,
    };
  }

  private seal(r: MfaRecord): StoredMfa {
    const ctx = this.context(r.identityId);
    return {
      id: r.id,
      identityId: r.identityId,
      isVerified: r.isVerified,
      sealedSecret: this.sealer.encrypt(r.secret, ctx),
      sealedRecoveryCodes: this.sealer.encrypt(JSON.stringify(r.recoveryCodes), ctx),
      tags: r.tags,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    };
  }

  private async find(s: AuthStores, identityId: string, forUpdate = false): Promise<MfaRecord | null> {
    const stored = await s.mfa.getByIdentity(identityId, forUpdate);
    return stored ? this.open(stored) : null;
  }

  private static newCodes(): string[] {
    return Array.from({ length: recoveryCodeCount }, newRecoveryCode);
  }

  /** `otpauth://totp/<issuer>:<name>?issuer=<issuer>&secret=<SECRET>` (label and issuer URL-escaped). */
  provisioningUrl(identityName: string, secret: string): string {
    const issuer = encodeURIComponent(this.options.issuer);
    return `otpauth://totp/${issuer}:${encodeURIComponent(identityName)}?issuer=${issuer}&secret=${secret}`;
  }

  async get(identityId: string): Promise<MfaRecord> {
    const record = await this.work((s) => this.find(s, identityId));
    if (!record) throw ApiError.notFound('mfa', identityId);
    return record;
  }

  async enroll(identityId: string): Promise<MfaRecord> {
    const now = this.now();
    const record: MfaRecord = {
      id: base62Uuid(),
      identityId,
      isVerified: false,
      secret: this.totp.newSecret(),
      recoveryCodes: MfaService.newCodes(),
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
    await this.work(async (s) => {
      if (await s.mfa.getByIdentity(identityId)) throw new ApiError('MFA_EXISTS');
      await s.mfa.insert(this.seal(record));
      await emitMfa(s.events, 'mfaCreated', record);
    });
    return record;
  }

  /** The PNG of the provisioning URL while enrollment is pending; 404 otherwise. */
  async qrCode(identityId: string, identityName: string): Promise<Buffer> {
    const record = await this.work((s) => this.find(s, identityId));
    if (!record) throw new ApiError('MFA_ENROLLMENT_NOT_STARTED');
    if (record.isVerified)
      throw new ApiError('NOT_FOUND', { code: 'UNHANDLED', message: 'MFA enrollment is already completed' });
    return this.qr.png(this.provisioningUrl(identityName, record.secret));
  }

  /** Completes enrollment with a TOTP code (recovery codes do not count) and completes this session's MFA. */
  async verify(identityId: string, apiSessionId: string, code: string): Promise<void> {
    await this.work(async (s) => {
      const record = await this.find(s, identityId, true);
      if (!record) throw new ApiError('MFA_ENROLLMENT_NOT_STARTED');
      if (record.isVerified)
        throw new ApiError('NOT_FOUND', { code: 'UNHANDLED', message: 'MFA enrollment is already completed' });
      if (!(await this.isTotp(record, code))) throw new ApiError('MFA_INVALID_TOKEN');
      const verified = { ...record, isVerified: true, updatedAt: this.now() };
      await s.mfa.update(this.seal(verified));
      await emitMfa(s.events, 'mfaVerified', verified);
      await emitMfaPassed(s.events, apiSessionId, identityId, verified.updatedAt);
    });
    await this.sessions.update(
      apiSessionId,
      { isMfaRequired: true, isMfaComplete: true },
      this.options.sessionTtlSeconds,
    );
  }

  /** Removes the caller's MFA: a verified one needs a TOTP or recovery code (header `mfa-validation-code`). */
  async remove(identityId: string, code: string | undefined): Promise<void> {
    await this.work(async (s) => {
      const record = await this.find(s, identityId, true);
      if (!record) throw ApiError.notFound('mfa', identityId);
      if (record.isVerified && !(await this.matches(record, code ?? '', true)).ok)
        throw new ApiError('MFA_INVALID_TOKEN');
      await s.mfa.deleteByIdentity(identityId);
      await emitMfa(s.events, 'mfaDeleted', record);
    });
  }

  /** The recovery codes of a verified MFA, shown against a TOTP code. */
  async recoveryCodes(identityId: string, code: string | undefined): Promise<MfaRecord> {
    const record = await this.work((s) => this.find(s, identityId));
    if (!record || !record.isVerified) throw new ApiError('MFA_ENROLLMENT_NOT_STARTED');
    if (!code || !(await this.isTotp(record, code))) throw new ApiError('MFA_INVALID_TOKEN');
    return record;
  }

  /** New recovery codes for a verified MFA, against a TOTP or recovery code; the old ones stop working. */
  async regenerateRecoveryCodes(identityId: string, code: string): Promise<void> {
    await this.work(async (s) => {
      const record = await this.find(s, identityId, true);
      if (!record || !record.isVerified) throw new ApiError('MFA_ENROLLMENT_NOT_STARTED');
      if (!(await this.matches(record, code, true)).ok) throw new ApiError('MFA_INVALID_TOKEN');
      await s.mfa.update(this.seal({ ...record, recoveryCodes: MfaService.newCodes(), updatedAt: this.now() }));
    });
  }

  /**
   * `POST /authenticate/mfa`: a TOTP code or a recovery code (used up) completes the session's
   * MFA. An identity without a verified MFA is MFA_NOT_ENROLLED. Each check is reported as an
   * attempt of method `mfa`, with the error code the caller gets when it fails (never the code).
   */
  async authenticate(identityId: string, apiSessionId: string, code: string): Promise<void> {
    const attempt = { method: 'mfa', identityId, apiSessionId } as const;
    try {
      await this.checkCode(identityId, apiSessionId, code);
    } catch (err) {
      this.options.attempts.report({ ...attempt, outcome: 'failed', reason: failureReason(err), at: this.now() });
      throw err;
    }
    this.options.attempts.report({ ...attempt, outcome: 'succeeded', at: this.now() });
  }

  private async checkCode(identityId: string, apiSessionId: string, code: string): Promise<void> {
    await this.work(async (s) => {
      const record = await this.find(s, identityId, true);
      if (!record || !record.isVerified) throw new ApiError('MFA_NOT_ENROLLED');
      const match = await this.matches(record, code, true);
      if (!match.ok) throw new ApiError('MFA_INVALID_TOKEN');
      if (match.used !== undefined) {
        const recoveryCodes = record.recoveryCodes.filter((_, i) => i !== match.used);
        await s.mfa.update(this.seal({ ...record, recoveryCodes, updatedAt: this.now() }));
      }
      await emitMfaPassed(s.events, apiSessionId, identityId, this.now());
    });
    await this.sessions.update(apiSessionId, { isMfaComplete: true }, this.options.sessionTtlSeconds);
  }

  /**
   * Admin removal (`DELETE /identities/{id}/mfa`). The identity's sessions are left as they are, as
   * in the reference: a session opened with MFA still pending stays pending (it never gets a second
   * factor for free; it can only log out or lapse, and the identity logs in anew without MFA), and
   * one that completed it stays complete.
   */
  async removeForIdentity(identityId: string): Promise<void> {
    await this.work(async (s) => {
      if (!(await s.identities.get(identityId))) throw ApiError.notFound('identity', identityId);
      const stored = await s.mfa.getByIdentity(identityId, true);
      if (stored && (await s.mfa.deleteByIdentity(identityId))) await emitMfa(s.events, 'mfaDeleted', stored);
    });
  }

  async verifiedAmong(identityIds: string[]): Promise<Set<string>> {
    return this.work((s) => s.mfa.verifiedAmong(identityIds));
  }

  private async isTotp(record: MfaRecord, code: string): Promise<boolean> {
    const c = code.trim();
    return isTotpShaped(c) && (await this.totp.verify(record.secret, c, this.now()));
  }

  /** A TOTP code, or (when allowed) one of the recovery codes, whose index is answered to be used up. */
  private async matches(
    record: MfaRecord,
    code: string,
    allowRecovery: boolean,
  ): Promise<{ ok: boolean; used?: number }> {
    if (!code.trim()) return { ok: false };
    if (await this.isTotp(record, code)) return { ok: true };
    if (!allowRecovery) return { ok: false };
    const i = recoveryCodeIndex(record.recoveryCodes, code);
    return i >= 0 ? { ok: true, used: i } : { ok: false };
  }
}
