import { emitAuthenticator } from './credential-events.domain.ts';
import { type Authenticator, newIdentity } from './model.domain.ts';
import { ApiError } from '@ziti/contracts';
import { base62Uuid, shortId } from '@ziti/platform/ids';
import { defaultAuthPolicyId, identityState } from '../identities/identities.domain.ts';
import { passwordLimits, usernameLimits } from '../passwords/password.domain.ts';
import type { PasswordHasher } from '../passwords/passwords.ports.ts';
import type { UnitOfWork } from './stores.ports.ts';
import { eventTypes } from '@ziti/contracts';

/** The default auth policy as the reference migrates it (ZITI-FACTS §7.5). */
export const defaultAuthPolicy = {
  id: defaultAuthPolicyId,
  name: 'Default',
  isSystem: true,
  primary: {
    cert: { allowed: true, allowExpiredCerts: true },
    updb: {
      allowed: true,
      minPasswordLength: 5,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 0,
      lockoutDurationMinutes: 0,
    },
    extJwt: { allowed: true, allowedSigners: [] as string[] },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null as string | null },
};

export interface AdminSeed {
  username: string;
  password: string;
  name?: string;
}

/**
 * First start, idempotent and safe when replicas start together: identity types, the default
 * auth policy and the default admin (ZITI-FACTS §7.1, §7.2, §7.5).
 */
export async function seedAuthData(
  work: UnitOfWork,
  hasher: PasswordHasher,
  admin: AdminSeed | undefined,
  now = new Date(),
): Promise<'created' | 'exists'> {
  await work(async (s) => {
    for (const id of ['Default', 'Router'])
      await s.identityTypes.insertIfAbsent({ id, name: id, createdAt: now, updatedAt: now });
    await s.authPolicies.insertIfAbsent({ ...defaultAuthPolicy, tags: {}, createdAt: now, updatedAt: now });
  });
  const existing = await work((s) => s.identities.findDefaultAdmin());
  if (existing) return 'exists';
  if (!admin) throw new Error('ZITI_ADMIN_PASSWORD is required to create the default admin at first start');
  if (admin.username.length < usernameLimits.min || admin.username.length > usernameLimits.max) {
    throw new Error(`the admin username must be ${usernameLimits.min}..${usernameLimits.max} characters`);
  }
  if (admin.password.length < passwordLimits.min || admin.password.length > passwordLimits.max) {
    throw new Error(`the admin password must be ${passwordLimits.min}..${passwordLimits.max} characters`);
  }
  const hashed = await hasher.hash(admin.password);
  try {
    await work(async (s) => {
      const identity = newIdentity({
        id: shortId(),
        name: admin.name ?? 'Default Admin',
        isAdmin: true,
        isDefaultAdmin: true,
        authPolicyId: defaultAuthPolicyId,
        createdAt: now,
      });
      await s.identities.insert(identity);
      const authenticator: Authenticator = {
        id: base62Uuid(),
        identityId: identity.id,
        method: 'updb',
        username: admin.username,
        passwordHash: hashed.hash,
        salt: hashed.salt,
        certFingerprint: null,
        certPem: null,
        tags: {},
        createdAt: now,
        updatedAt: now,
      };
      await s.authenticators.insert(authenticator);
      await s.events.emit(eventTypes.identityCreated, identityState(identity));
      await emitAuthenticator(s.events, 'authenticatorCreated', authenticator);
    });
  } catch (err) {
    // Another replica created it at the same moment: the unique index on is_default_admin decided.
    if (err instanceof ApiError || (await work((s) => s.identities.findDefaultAdmin()))) return 'exists';
    throw err;
  }
  return 'created';
}
