import { emitAuthPolicy } from '../shared/credential-events.domain.ts';
import { ApiError, requireName, stringifyValue } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { type AuthPolicy, defaultAuthPolicyId, normalizePrimary, normalizeSecondary } from './auth-policy.domain.ts';
import type { ListInput, ListPage } from '../shared/model.domain.ts';
import type { AuthStores, UnitOfWork } from '../shared/stores.ports.ts';
import type { SessionFactorSync } from '../api-sessions/session-factors.domain.ts';

/** The wire input of create/replace (everything) and patch (any subset, nested sections too). */
export interface AuthPolicyInput {
  name?: string | null;
  primary?: {
    cert?: { allowed?: boolean | null; allowExpiredCerts?: boolean | null } | null;
    updb?: {
      allowed?: boolean | null;
      minPasswordLength?: number | null;
      requireSpecialChar?: boolean | null;
      requireNumberChar?: boolean | null;
      requireMixedCase?: boolean | null;
      maxAttempts?: number | null;
      lockoutDurationMinutes?: number | null;
    } | null;
    extJwt?: { allowed?: boolean | null; allowedSigners?: string[] | null } | null;
  } | null;
  secondary?: { requireTotp?: boolean | null; requireExtJwtSigner?: string | null } | null;
  tags?: Record<string, unknown> | null;
}

type Section = Record<string, unknown>;

/**
 * PATCH of a nested section: only the keys present change; a key given as `null` takes its zero
 * value (false, 0, empty list, no signer), as the reference's field-wise patch does.
 */
function patchSection(current: Section, patch: Section | null | undefined, zero: Section): Section {
  if (!patch) return current;
  const next = { ...current };
  for (const key of Object.keys(zero)) {
    if (Object.hasOwn(patch, key)) next[key] = patch[key] ?? zero[key];
  }
  return next;
}

const zeroPrimary = {
  cert: { allowed: false, allowExpiredCerts: false },
  updb: {
    allowed: false,
    minPasswordLength: 0,
    requireSpecialChar: false,
    requireNumberChar: false,
    requireMixedCase: false,
    maxAttempts: 0,
    lockoutDurationMinutes: 0,
  },
  extJwt: { allowed: false, allowedSigners: [] as string[] },
};

/** Auth policies (management, admin): CRUD with the reference's normalisation and reference checks. */
export class AuthPolicyService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sync: SessionFactorSync,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(id: string): Promise<AuthPolicy> {
    return this.work((s) => this.load(s, id));
  }

  private async load(s: AuthStores, id: string, forUpdate = false): Promise<AuthPolicy> {
    const p = await s.authPolicies.get(id, { forUpdate });
    if (!p) throw ApiError.notFound('authPolicy', id);
    return p;
  }

  async list(input: ListInput): Promise<ListPage<AuthPolicy>> {
    return this.work((s) => s.authPolicies.list(input));
  }

  async create(input: AuthPolicyInput): Promise<AuthPolicy> {
    const now = this.now();
    const policy = this.build({ id: base62Uuid(), isSystem: false, tags: {}, createdAt: now, updatedAt: now }, input);
    return this.work(async (s) => {
      await this.checkSigners(s, policy);
      await s.authPolicies.insert(policy);
      await emitAuthPolicy(s.events, 'authPolicyCreated', policy);
      return policy;
    });
  }

  async update(id: string, input: AuthPolicyInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      const base = {
        id,
        isSystem: current.isSystem,
        tags: current.tags,
        createdAt: current.createdAt,
        updatedAt: this.now(),
      };
      const next =
        mode === 'replace'
          ? this.build(base, input)
          : this.build(base, {
              name: Object.hasOwn(input, 'name') ? input.name : current.name,
              primary: input.primary
                ? {
                    cert: patchSection(current.primary.cert, input.primary.cert, zeroPrimary.cert),
                    updb: patchSection(current.primary.updb, input.primary.updb, zeroPrimary.updb),
                    extJwt: patchSection(current.primary.extJwt, input.primary.extJwt, zeroPrimary.extJwt),
                  }
                : current.primary,
              secondary: patchSection(current.secondary as unknown as Section, input.secondary, {
                requireTotp: false,
                requireExtJwtSigner: null,
              }),
              tags: Object.hasOwn(input, 'tags') ? input.tags : current.tags,
            });
      await this.checkSigners(s, next);
      await s.authPolicies.update(next);
      await emitAuthPolicy(s.events, 'authPolicyUpdated', next);
    });
    await this.sync.refreshPolicies([id]);
  }

  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      const users = await s.identities.idsByAuthPolicy(id, 50);
      if (users.length > 0) {
        throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          field: 'authPolicyId',
          reason: `entity type authPolicies referenced by identities: ${stringifyValue(users)}`,
          value: stringifyValue(users),
        });
      }
      if (current.isSystem || id === defaultAuthPolicyId) {
        throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', {
          code: 'UNHANDLED',
          message: 'the default auth policy can not be deleted',
        });
      }
      await s.authPolicies.delete(id);
      await emitAuthPolicy(s.events, 'authPolicyDeleted', current);
    });
  }

  private build(
    base: Pick<AuthPolicy, 'id' | 'isSystem' | 'tags' | 'createdAt' | 'updatedAt'>,
    input: AuthPolicyInput,
  ): AuthPolicy {
    const name = requireName(input.name);
    return {
      ...base,
      name,
      primary: normalizePrimary(input.primary),
      secondary: normalizeSecondary(input.secondary),
      tags: input.tags ?? {},
    };
  }

  /** Referenced signers must exist (ZITI-FACTS §11: 404 with a field cause). */
  private async checkSigners(s: AuthStores, policy: AuthPolicy): Promise<void> {
    for (const [i, signerId] of policy.primary.extJwt.allowedSigners.entries()) {
      if (!(await s.extJwtSigners.get(signerId))) {
        throw new ApiError('NOT_FOUND', {
          field: `primary.extJwt.allowedExtJwtSigners[${i}]`,
          reason: `no external JWT signer found with id ${signerId}`,
          value: signerId,
        });
      }
    }
    const required = policy.secondary.requireExtJwtSigner;
    if (required && !(await s.extJwtSigners.get(required))) {
      throw new ApiError('NOT_FOUND', {
        field: 'secondary.requiredExtJwtSigner',
        reason: `no external JWT signer found with id ${required}`,
        value: required,
      });
    }
  }
}
