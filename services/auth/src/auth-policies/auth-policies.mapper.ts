import { ts } from '../shared/wire.mapper.ts';
import type { AuthPolicy } from './auth-policy.domain.ts';

/** Wire shapes of auth policies (ZITI-FACTS §11). */
export function authPolicyDetail(p: AuthPolicy) {
  return {
    id: p.id,
    createdAt: ts(p.createdAt),
    updatedAt: ts(p.updatedAt),
    tags: p.tags,
    _links: { self: { href: `./auth-policies/${p.id}` } },
    name: p.name,
    primary: {
      cert: { ...p.primary.cert },
      extJwt: { allowed: p.primary.extJwt.allowed, allowedSigners: [...p.primary.extJwt.allowedSigners] },
      updb: { ...p.primary.updb },
    },
    // Without a required signer the reference leaves `requireExtJwtSigner` out (not null).
    secondary: {
      requireTotp: p.secondary.requireTotp,
      ...(p.secondary.requireExtJwtSigner !== null ? { requireExtJwtSigner: p.secondary.requireExtJwtSigner } : {}),
    },
  };
}
