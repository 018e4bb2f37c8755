import { ts } from '../shared/wire.mapper.ts';
import type { MfaRecord } from './mfas.domain.ts';

/** Wire shapes of MFA (ZITI-FACTS §9). */
function mfaBase(m: MfaRecord) {
  return { id: m.id, createdAt: ts(m.createdAt), updatedAt: ts(m.updatedAt), tags: m.tags };
}

/** `GET /current-identity/mfa`: the secret's URL and the recovery codes only while unverified (ZITI-FACTS §9.2). */
export function mfaDetail(m: MfaRecord, provisioningUrl: string) {
  const links: Record<string, { href: string }> = {
    self: { href: './current-identity/mfa' },
    'current-identity': { href: './current-identity' },
  };
  if (m.isVerified) {
    links['recovery-codes'] = { href: './current-identity/mfa/recovery-codes' };
    return { ...mfaBase(m), _links: links, isVerified: true };
  }
  links.verify = { href: './current-identity/mfa/verify' };
  links.qr = { href: './current-identity/mfa/qr-code' };
  return { ...mfaBase(m), _links: links, isVerified: false, provisioningUrl, recoveryCodes: [...m.recoveryCodes] };
}

export function mfaRecoveryCodesDetail(m: MfaRecord) {
  return {
    ...mfaBase(m),
    _links: { self: { href: './current-identity/mfa/recovery-codes' }, mfa: { href: './current-identity/mfa' } },
    recoveryCodes: [...m.recoveryCodes],
  };
}
