import { ApiError, type ApiSessionDeleteReason, type IdentityState, eventTypes, requireName } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import { emitMfa } from '../api-sessions/api-session-events.domain.ts';
import { SessionEnding } from '../api-sessions/session-ending.domain.ts';
import { unknownAuthPolicy } from '../auth-policies/auth-policy.domain.ts';
import type { Identity, IdentityView, ListInput, ListPage, RoleFilter } from '../shared/model.domain.ts';
import { recordedDisabled } from '../shared/model.domain.ts';
import type { AuthStores, SessionStore, UnitOfWork } from '../shared/stores.ports.ts';
import { secondaryFactorsOf } from '../api-sessions/session-factors.domain.ts';
import type { EnrollmentPort, EnrollmentRequestSpec } from '../credentials/credentials.domain.ts';
import type { ServiceExistencePort } from './identities.ports.ts';

/** What an administrator may set on an identity (create, replace or patch). */
export interface IdentityInput {
  name?: string | null;
  type?: string | null;
  isAdmin?: boolean | null;
  roleAttributes?: string[] | null;
  externalId?: string | null;
  authPolicyId?: string | null;
  defaultHostingPrecedence?: string | null;
  defaultHostingCost?: number | null;
  serviceHostingCosts?: Record<string, number> | null;
  serviceHostingPrecedences?: Record<string, string> | null;
  appData?: Record<string, unknown> | null;
  tags?: Record<string, unknown> | null;
  enrollment?: { ott?: boolean; ottca?: string; updb?: string } | null;
}

export const defaultAuthPolicyId = 'default';
const acceptedTypes = new Set(['User', 'Device', 'Service', 'Router', 'Default']);

/**
 * The identity as its events carry it: a function of the stored identity only (never of the
 * clock), so an event and `entityStates` agree.
 */
export function identityState(i: Identity): IdentityState {
  return {
    id: i.id,
    name: i.name,
    typeId: i.typeId,
    isAdmin: i.isAdmin,
    isDefaultAdmin: i.isDefaultAdmin,
    roleAttributes: i.roleAttributes,
    externalId: i.externalId,
    authPolicyId: i.authPolicyId,
    disabled: i.disabled,
    disabledAt: i.disabledAt?.toISOString() ?? null,
    disabledUntil: i.disabledUntil?.toISOString() ?? null,
    tags: i.tags,
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  };
}

export function assertRoleAttributes(field: string, values: string[] | null | undefined): string[] {
  const list = values ?? [];
  for (const v of list) {
    if (v.startsWith('#') || v.startsWith('@')) {
      throw ApiError.field(field, 'role attributes may not be prefixed with # or @', v);
    }
  }
  return [...new Set(list)].sort();
}

/**
 * An empty or blank `externalId` is no external id (as the reference stores it: the console's
 * identity form always sends `""`, and the unique index must not count it). Reads answer `null`.
 */
export function externalIdOf(value: string | null | undefined): string | null {
  return value == null || value.trim() === '' ? null : value;
}

/** The create body's `enrollment`: `{ott:true}` | `{ottca:caId}` | `{updb:username}`, first match wins (ZITI-FACTS §12.1). */
function enrollmentSpecsOf(enrollment: IdentityInput['enrollment']): EnrollmentRequestSpec[] {
  if (!enrollment) return [];
  if (enrollment.ott) return [{ method: 'ott' }];
  if (enrollment.ottca) return [{ method: 'ottca', caId: enrollment.ottca }];
  if (enrollment.updb) return [{ method: 'updb', username: enrollment.updb }];
  return [];
}

/**
 * Identity administration. Every change and its event commit together; a deleted or disabled
 * identity loses its API sessions.
 */
/** The services one identity may name hosting costs or precedences for (one bus call checks them). */
const maxHostedServices = 1000;

export class IdentityService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionStore,
    private readonly sessionTtlSeconds: number,
    private readonly now: () => Date = () => new Date(),
    /** pki-enrollment, which creates the enrollments an identity is created with. */
    private readonly enrollments?: EnrollmentPort,
    /** Stores outside a transaction, for reads on the request path (defaults to `work`). */
    private readonly read: UnitOfWork = work,
    /** inventory, which says whether the services of hosting costs and precedences exist. */
    private readonly services?: ServiceExistencePort,
  ) {}

  /**
   * Hosting costs and precedences only for services that exist, as the reference's identity store
   * checks them: the first unknown one (in id order) is NOT_FOUND. Asked before any transaction.
   */
  private async checkHostedServices(input: IdentityInput): Promise<void> {
    const ids = [
      ...new Set([
        ...Object.keys(input.serviceHostingCosts ?? {}),
        ...Object.keys(input.serviceHostingPrecedences ?? {}),
      ]),
    ].sort();
    if (ids.length === 0 || !this.services) return;
    if (ids.length > maxHostedServices) {
      throw ApiError.field('serviceHostingCosts', `at most ${maxHostedServices} services per identity`, ids.length);
    }
    const existing = new Set(await this.services.existing(ids));
    const missing = ids.find((id) => !existing.has(id));
    if (missing !== undefined) throw ApiError.notFound('services', missing);
  }

  async get(id: string): Promise<Identity> {
    return this.read(async (s) => this.load(s, id));
  }

  async list(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Identity>> {
    return this.read((s) => s.identities.list(input, roleFilter));
  }

  /** An identity with what its detail shows (one read). */
  async view(id: string): Promise<IdentityView> {
    const view = await this.read((s) => s.identities.getView(id));
    if (!view) throw ApiError.notFound('identity', id);
    return view;
  }

  /**
   * Identities with what their details show (one read), in the order of `ids`, each once; an id
   * no identity has is left out.
   */
  async views(ids: string[]): Promise<IdentityView[]> {
    if (ids.length === 0) return [];
    const found = new Map((await this.read((s) => s.identities.getViews(ids))).map((v) => [v.identity.id, v]));
    return [...new Set(ids)].flatMap((id) => found.get(id) ?? []);
  }

  /** A page of identities with what their details show, and the total (one read). */
  async listViews(input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<IdentityView>> {
    return this.read((s) => s.identities.listViews(input, roleFilter));
  }

  /** `forUpdate`: the row stays locked until the unit of work ends (every read-modify-write). */
  private async load(s: AuthStores, id: string, forUpdate = false): Promise<Identity> {
    const identity = await s.identities.get(id, { forUpdate });
    if (!identity) throw ApiError.notFound('identity', id);
    return identity;
  }

  /**
   * Every type a body may name is stored as Default, as the reference's create does (type Router
   * too: a router's identity comes only with its edge router). An update may not turn an identity
   * into a router's (the reference would, leaving an identity no router owns).
   */
  private typeIdOf(type: string | null | undefined, on: 'create' | 'update'): string {
    if (type === 'Router' && on === 'update')
      throw ApiError.field('type', 'identities of type Router are created with their edge router', type);
    if (type && !acceptedTypes.has(type))
      throw ApiError.field('type', `type in body should be one of [User Device Service Router Default]`, type);
    return 'Default';
  }

  private async checkAuthPolicy(s: AuthStores, id: string): Promise<void> {
    if (!(await s.authPolicies.get(id))) throw unknownAuthPolicy(id);
  }

  /**
   * Creates an identity, with its enrollment when the body asks for one (ZITI-FACTS §5.1, §12.1):
   * pki-enrollment creates the enrollment first, and it is removed again if the identity does not
   * commit, so the client sees both or neither. (No transaction is held during the call: a service
   * never waits on another while holding its own database.)
   */
  async create(input: IdentityInput): Promise<Identity> {
    const specs = enrollmentSpecsOf(input.enrollment);
    const enrollments = this.enrollments;
    if (specs.length > 0 && !enrollments) {
      throw new ApiError('NOT_IMPLEMENTED', {
        code: 'NOT_IMPLEMENTED',
        message: 'creating an identity with an enrollment needs pki-enrollment',
      });
    }
    const name = requireName(input.name);
    await this.checkHostedServices(input);
    const now = this.now();
    const identity: Identity = {
      id: shortId(),
      name,
      typeId: this.typeIdOf(input.type, 'create'),
      isAdmin: input.isAdmin ?? false,
      isDefaultAdmin: false,
      roleAttributes: assertRoleAttributes('roleAttributes', input.roleAttributes),
      externalId: externalIdOf(input.externalId),
      authPolicyId: input.authPolicyId || defaultAuthPolicyId,
      disabled: false,
      disabledAt: null,
      disabledUntil: null,
      defaultHostingPrecedence: input.defaultHostingPrecedence ?? null,
      defaultHostingCost: input.defaultHostingCost ?? 0,
      serviceHostingCosts: input.serviceHostingCosts ?? {},
      serviceHostingPrecedences: input.serviceHostingPrecedences ?? {},
      appData: input.appData ?? {},
      envInfo: {},
      sdkInfo: {},
      tags: input.tags ?? {},
      createdAt: now,
      updatedAt: now,
    };
    const enrolled = specs.length > 0 ? await enrollments!.createForIdentity(identity.id, specs) : [];
    try {
      return await this.work(async (s) => {
        // The insert refuses an unknown auth policy itself (no read of the policy first).
        await s.identities.insert(identity);
        await s.events.emit(eventTypes.identityCreated, identityState(identity));
        return identity;
      });
    } catch (err) {
      // The identity did not commit: take back its enrollments (best effort; an enrollment of a
      // missing identity can never be used, as auth refuses a credential for it).
      if (enrolled.length > 0) await enrollments!.deleteForIdentity(identity.id, enrolled).catch(() => undefined);
      throw err;
    }
  }

  /** PUT replaces every updatable field (absent ones become empty); PATCH only those present. */
  async update(id: string, input: IdentityInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.checkHostedServices(input);
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      // Stamped under the lock: a change that waited for another is stamped after it.
      const now = this.now();
      const has = (k: keyof IdentityInput) => mode === 'replace' || Object.hasOwn(input, k);
      // A timed disable that passed ends with this change (the sweeper would record it otherwise).
      const next: Identity = { ...current, disabled: recordedDisabled(current, now), updatedAt: now };
      if (has('name')) next.name = requireName(input.name);
      if (has('type') && (mode === 'replace' || input.type != null))
        next.typeId = current.typeId === 'Router' ? 'Router' : this.typeIdOf(input.type, 'update');
      if (has('isAdmin')) next.isAdmin = current.isDefaultAdmin ? true : (input.isAdmin ?? false);
      if (has('roleAttributes')) next.roleAttributes = assertRoleAttributes('roleAttributes', input.roleAttributes);
      if (has('externalId')) next.externalId = externalIdOf(input.externalId);
      if (has('authPolicyId')) next.authPolicyId = input.authPolicyId || defaultAuthPolicyId;
      if (has('defaultHostingPrecedence')) next.defaultHostingPrecedence = input.defaultHostingPrecedence ?? null;
      if (has('defaultHostingCost')) next.defaultHostingCost = input.defaultHostingCost ?? 0;
      if (has('serviceHostingCosts')) next.serviceHostingCosts = input.serviceHostingCosts ?? {};
      if (has('serviceHostingPrecedences')) next.serviceHostingPrecedences = input.serviceHostingPrecedences ?? {};
      if (has('appData')) next.appData = input.appData ?? {};
      if (has('tags')) next.tags = input.tags ?? {};
      if (next.authPolicyId !== current.authPolicyId) await this.checkAuthPolicy(s, next.authPolicyId);
      await s.identities.update(next);
      await s.events.emit(eventTypes.identityUpdated, identityState(next));
    });
    if (
      mode === 'replace' ||
      Object.hasOwn(input, 'isAdmin') ||
      Object.hasOwn(input, 'authPolicyId') ||
      Object.hasOwn(input, 'name')
    ) {
      await this.refreshSessions(id);
    }
  }

  /**
   * Sessions carry `isAdmin` and the auth policy's secondary factors for the gateway's check:
   * keep them in step with the identity.
   */
  private async refreshSessions(id: string): Promise<void> {
    const sessionIds = await this.sessions.listIdsByIdentity(id);
    if (sessionIds.length === 0) return;
    const found = await this.work(async (s) => {
      const identity = await s.identities.get(id);
      return identity ? { identity, factors: await secondaryFactorsOf(s, identity.authPolicyId) } : null;
    });
    if (!found) return;
    for (const sid of sessionIds) {
      await this.sessions.update(
        sid,
        { isAdmin: found.identity.isAdmin, identityName: found.identity.name, ...found.factors },
        this.sessionTtlSeconds,
      );
    }
  }

  /** Runs `change` and ends the identity's API sessions with it (api-sessions/session-ending.domain.ts). */
  private withSessionsEnded<T>(
    identityId: string,
    reason: ApiSessionDeleteReason,
    change: (s: AuthStores) => Promise<T>,
  ): Promise<T> {
    return new SessionEnding(this.sessions, this.now).around(this.work, { identityId }, reason, change);
  }

  private assertDeletable(identity: Identity): void {
    if (identity.isDefaultAdmin) {
      throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', {
        code: 'UNHANDLED',
        message: 'the default admin can not be deleted',
      });
    }
    if (identity.typeId === 'Router') {
      throw new ApiError('ENTITY_CAN_NOT_BE_DELETED', {
        code: 'UNHANDLED',
        message: 'router identities are deleted with their edge router',
      });
    }
  }

  /** Deletes an identity with its MFA (cascade) and its API sessions, announcing each. */
  async delete(id: string): Promise<void> {
    // Refusals first: the sessions end before the deletion commits.
    this.assertDeletable(await this.read((s) => this.load(s, id)));
    await this.withSessionsEnded(id, 'identityDeleted', async (s) => {
      const current = await this.load(s, id, true);
      this.assertDeletable(current);
      const mfa = await s.mfa.getByIdentity(id, true);
      await s.identities.delete(id);
      await s.events.emit(eventTypes.identityDeleted, identityState(current));
      if (mfa) await emitMfa(s.events, 'mfaDeleted', mfa);
    });
  }

  async disable(id: string, durationMinutes: number): Promise<void> {
    if (!Number.isInteger(durationMinutes) || durationMinutes < 0) {
      throw ApiError.field('durationMinutes', 'durationMinutes must be a non-negative integer', durationMinutes);
    }
    await this.read((s) => this.load(s, id));
    await this.withSessionsEnded(id, 'identityDisabled', async (s) => {
      const current = await this.load(s, id, true);
      const now = this.now();
      const next: Identity = {
        ...current,
        disabled: true,
        disabledAt: now,
        disabledUntil: durationMinutes > 0 ? new Date(now.getTime() + durationMinutes * 60_000) : null,
        updatedAt: now,
      };
      await s.identities.update(next);
      await s.events.emit(eventTypes.identityUpdated, identityState(next));
    });
  }

  async enable(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      const now = this.now();
      const next: Identity = { ...current, disabled: false, disabledAt: null, disabledUntil: null, updatedAt: now };
      await s.identities.update(next);
      await s.events.emit(eventTypes.identityUpdated, identityState(next));
    });
  }
}
