import { ApiError } from '@ziti/contracts';
import { passwordLimits } from '../passwords/password.domain.ts';

/** An auth policy with the full primary/secondary shape (ZITI-FACTS §11). */
export interface AuthPolicyPrimary {
  cert: { allowed: boolean; allowExpiredCerts: boolean };
  updb: {
    allowed: boolean;
    minPasswordLength: number;
    requireSpecialChar: boolean;
    requireNumberChar: boolean;
    requireMixedCase: boolean;
    maxAttempts: number;
    lockoutDurationMinutes: number;
  };
  extJwt: { allowed: boolean; allowedSigners: string[] };
}

export interface AuthPolicySecondary {
  requireTotp: boolean;
  requireExtJwtSigner: string | null;
}

export interface AuthPolicy {
  id: string;
  name: string;
  isSystem: boolean;
  primary: AuthPolicyPrimary;
  secondary: AuthPolicySecondary;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

export const defaultAuthPolicyId = 'default';

/** An identity names an auth policy that does not exist. */
export function unknownAuthPolicy(id: string): ApiError {
  return new ApiError('COULD_NOT_VALIDATE', {
    field: 'authPolicyId',
    reason: `no auth policy found with id ${id}`,
    value: id,
  });
}

/** What the reference's store fills in for a field never written (ZITI-FACTS §7.5, §11). */
const storeDefaults: { primary: AuthPolicyPrimary; secondary: AuthPolicySecondary } = {
  primary: {
    cert: { allowed: true, allowExpiredCerts: true },
    updb: {
      allowed: true,
      minPasswordLength: passwordLimits.min,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 5,
      lockoutDurationMinutes: 0,
    },
    extJwt: { allowed: true, allowedSigners: [] },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null },
};

const bool = (v: unknown, fallback: boolean) => (typeof v === 'boolean' ? v : fallback);
const int = (v: unknown, fallback: number) => (typeof v === 'number' && Number.isInteger(v) ? v : fallback);

/**
 * The stored normalisation of the reference (`auth_policy_store.go PersistEntity`): a minimum
 * password length below 5 is 5 (and above the 100-character password limit is 100, which no
 * password could meet otherwise); negative attempt counts and lockout durations are 0. Missing
 * fields (a partial stored document) take the store's defaults.
 */
export function normalizePrimary(raw: unknown): AuthPolicyPrimary {
  const p = (raw ?? {}) as {
    cert?: Record<string, unknown>;
    updb?: Record<string, unknown>;
    extJwt?: Record<string, unknown>;
  };
  const d = storeDefaults.primary;
  const signers = Array.isArray(p.extJwt?.allowedSigners)
    ? (p.extJwt.allowedSigners as unknown[]).filter((s): s is string => typeof s === 'string')
    : [];
  return {
    cert: {
      allowed: bool(p.cert?.allowed, d.cert.allowed),
      allowExpiredCerts: bool(p.cert?.allowExpiredCerts, d.cert.allowExpiredCerts),
    },
    updb: {
      allowed: bool(p.updb?.allowed, d.updb.allowed),
      minPasswordLength: Math.min(
        passwordLimits.max,
        Math.max(passwordLimits.min, int(p.updb?.minPasswordLength, d.updb.minPasswordLength)),
      ),
      requireSpecialChar: bool(p.updb?.requireSpecialChar, d.updb.requireSpecialChar),
      requireNumberChar: bool(p.updb?.requireNumberChar, d.updb.requireNumberChar),
      requireMixedCase: bool(p.updb?.requireMixedCase, d.updb.requireMixedCase),
      maxAttempts: Math.max(0, int(p.updb?.maxAttempts, d.updb.maxAttempts)),
      lockoutDurationMinutes: Math.max(0, int(p.updb?.lockoutDurationMinutes, d.updb.lockoutDurationMinutes)),
    },
    extJwt: { allowed: bool(p.extJwt?.allowed, d.extJwt.allowed), allowedSigners: [...new Set(signers)] },
  };
}

export function normalizeSecondary(raw: unknown): AuthPolicySecondary {
  const s = (raw ?? {}) as Record<string, unknown>;
  const signer =
    typeof s.requireExtJwtSigner === 'string' && s.requireExtJwtSigner !== '' ? s.requireExtJwtSigner : null;
  return { requireTotp: bool(s.requireTotp, false), requireExtJwtSigner: signer };
}

/**
 * The password rules of an auth policy's updb section. The reference stores them without
 * enforcing them; here every password set through the API or enrollment must meet them. A
 * "special character" is anything that is neither a letter nor a digit.
 */
export function assertPasswordMeetsPolicy(password: string, updb: AuthPolicyPrimary['updb'], field = 'password'): void {
  const fail = (reason: string): never => {
    throw ApiError.field(field, reason, '***');
  };
  if ([...password].length < updb.minPasswordLength)
    fail(`${field} must be at least ${updb.minPasswordLength} characters long`);
  if (updb.requireMixedCase && !(/\p{Lu}/u.test(password) && /\p{Ll}/u.test(password)))
    fail(`${field} must contain upper and lower case letters`);
  if (updb.requireNumberChar && !/\p{Nd}/u.test(password)) fail(`${field} must contain a number`);
  if (updb.requireSpecialChar && !/[^\p{L}\p{Nd}]/u.test(password)) fail(`${field} must contain a special character`);
}

/** Whether a signer may be used for primary ext-jwt authentication under this policy. */
export function allowsSigner(primary: AuthPolicyPrimary, signerId: string): boolean {
  return (
    primary.extJwt.allowed &&
    (primary.extJwt.allowedSigners.length === 0 || primary.extJwt.allowedSigners.includes(signerId))
  );
}
