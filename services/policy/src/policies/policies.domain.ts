import { ApiError, type EventDefinition, requireName } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { base62Uuid } from '@ziti/platform/ids';
import type { AccessDerivation } from '../access/access.domain.ts';
import type { PolicyKind } from '../access/access.ports.ts';
import type { PolicyStore, PolicyStores, PolicyUnitOfWork } from './policies.ports.ts';
import { type RoleField, type RoleTarget, referencedIds, roleTargetOf, validateRoles } from './roles.domain.ts';

export type Semantic = 'AllOf' | 'AnyOf';
export type ServicePolicyType = 'Dial' | 'Bind';
export const semantics: readonly Semantic[] = ['AllOf', 'AnyOf'];
export const servicePolicyTypes: readonly ServicePolicyType[] = ['Dial', 'Bind'];

/**
 * One policy of any of the three kinds (ZITI-FACTS §12.6). `roles` holds exactly the role fields
 * of its kind, sorted; `type` is set on service policies only; `isSystem` is only ever true for
 * edge-router policies the controller made itself.
 */
export interface Policy {
  id: string;
  name: string;
  semantic: Semantic;
  type: ServicePolicyType | null;
  isSystem: boolean;
  roles: Partial<Record<RoleField, string[]>>;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** How a change of a policy is announced (its `…Policy.<what>` event). */
export type PolicyChangeKind = 'created' | 'updated' | 'deleted';

/**
 * A policy written by the controller itself in a caller's transaction (a system policy, or roles
 * that named a deleted entity), announced with `PolicyService.announce` once the caller's other
 * derivations ran (policies/entity-changes.domain.ts).
 */
export interface PolicyChange {
  kind: PolicyKind;
  what: PolicyChangeKind;
  policy: Policy;
}

/** What an administrator may set (create, replace or patch; PATCH: an omitted field keeps, null clears). */
export interface PolicyInput {
  name?: string | null;
  semantic?: string | null;
  type?: string | null;
  identityRoles?: string[] | null;
  serviceRoles?: string[] | null;
  edgeRouterRoles?: string[] | null;
  postureCheckRoles?: string[] | null;
  tags?: Record<string, unknown> | null;
}

/** What differs between the three kinds (each kind's `<kind>.domain.ts` declares its spec). */
export interface PolicyKindSpec {
  kind: PolicyKind;
  /** The singular entity type of not-found causes (`servicePolicy with id X not found`). */
  singular: string;
  roleFields: readonly RoleField[];
  hasType: boolean;
  events: { created: EventDefinition; updated: EventDefinition; deleted: EventDefinition };
  store: (stores: PolicyStores) => PolicyStore;
}

function semanticOf(value: string | null | undefined): Semantic {
  if (!semantics.includes(value as Semantic)) {
    throw ApiError.field('semantic', `semantic in body should be one of [${semantics.join(' ')}]`, value);
  }
  return value as Semantic;
}

/** `Invalid` is in the spec's enum (it is a permission too) but no policy can have it. */
function typeOf(value: string | null | undefined): ServicePolicyType {
  if (!servicePolicyTypes.includes(value as ServicePolicyType)) {
    throw ApiError.field('type', `type in body should be one of [${servicePolicyTypes.join(' ')}]`, value);
  }
  return value as ServicePolicyType;
}

/** The full state a policy event carries (the kind's schema in `policyEventTypes`). */
export function policyState(spec: PolicyKindSpec, p: Policy): Record<string, unknown> {
  return {
    id: p.id,
    name: p.name,
    ...(spec.hasType ? { type: p.type } : {}),
    semantic: p.semantic,
    ...Object.fromEntries(spec.roleFields.map((f) => [f, p.roles[f] ?? []])),
    ...(spec.kind === 'edgeRouter' ? { isSystem: p.isSystem } : {}),
    tags: p.tags,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

/**
 * Management of one policy kind. Every change writes the row, re-derives the links and access of
 * what the policy selected before and after it, and announces the policy's full state — all in
 * the caller's one transaction.
 */
export class PolicyService {
  constructor(
    readonly spec: PolicyKindSpec,
    private readonly work: PolicyUnitOfWork,
    private readonly read: PolicyUnitOfWork,
    private readonly access: AccessDerivation,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(input: ListInput): Promise<ListPage<Policy>> {
    return this.read((s) => this.spec.store(s).list(input));
  }

  get(id: string): Promise<Policy> {
    return this.read((s) => this.load(s, id));
  }

  /** Names of the entities the `@id` roles of `policies` reference, per target type. */
  async roleNames(policies: Policy[]): Promise<Map<RoleTarget, Map<string, string>>> {
    return this.read(async (s) => {
      const out = new Map<RoleTarget, Map<string, string>>();
      for (const field of this.spec.roleFields) {
        const target = roleTargetOf[field];
        const ids = referencedIds(policies.map((p) => p.roles[field] ?? []));
        if (ids.length > 0) out.set(target, await s.targets.names(target, ids));
      }
      return out;
    });
  }

  async create(input: PolicyInput): Promise<Policy> {
    const now = this.now();
    return this.work(async (s) => {
      const policy: Policy = {
        id: base62Uuid(),
        name: requireName(input.name),
        semantic: semanticOf(input.semantic),
        type: this.spec.hasType ? typeOf(input.type) : null,
        isSystem: false,
        roles: await this.rolesOf(s, input, () => true, {}),
        tags: input.tags ?? {},
        createdAt: now,
        updatedAt: now,
      };
      await this.spec.store(s).insert(policy);
      await this.announce(s, 'created', policy);
      return policy;
    });
  }

  /** PUT replaces every updatable field (absent ones become empty); PATCH only those present. */
  async update(id: string, input: PolicyInput, mode: 'replace' | 'patch'): Promise<void> {
    const has = (key: keyof PolicyInput) => mode === 'replace' || Object.hasOwn(input, key);
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      // Before the body's roles are looked at, as the reference's store refuses it.
      if (current.isSystem) throw this.systemRefusal('update', id);
      const next: Policy = {
        ...current,
        roles: await this.rolesOf(s, input, has, current.roles),
        updatedAt: this.now(),
      };
      if (has('name')) next.name = requireName(input.name);
      if (has('semantic')) next.semantic = semanticOf(input.semantic);
      if (this.spec.hasType && has('type')) next.type = typeOf(input.type);
      if (has('tags')) next.tags = input.tags ?? {};
      await this.spec.store(s).update(next);
      await this.announce(s, 'updated', next);
    });
  }

  /** System policies (the controller's own) can not be deleted through the API (ZITI-FACTS §5.2). */
  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await this.load(s, id, true);
      if (current.isSystem) throw this.systemRefusal('delete', id);
      await this.spec.store(s).delete(id);
      await this.announce(s, 'deleted', { ...current, updatedAt: this.now() });
    });
  }

  /** The reference's answer to an API write of a system policy (400, the store's error as the cause). */
  private systemRefusal(what: 'update' | 'delete', id: string): ApiError {
    const code = what === 'update' ? 'ENTITY_CAN_NOT_BE_UPDATED' : 'ENTITY_CAN_NOT_BE_DELETED';
    return new ApiError(code, `cannot ${what} system ${this.spec.singular} in a non-system context (id=${id})`);
  }

  private async load(s: PolicyStores, id: string, forUpdate = false): Promise<Policy> {
    const policy = await this.spec.store(s).get(id, { forUpdate });
    if (!policy) throw ApiError.notFound(this.spec.singular, id);
    return policy;
  }

  private async rolesOf(
    s: PolicyStores,
    input: PolicyInput,
    has: (key: keyof PolicyInput) => boolean,
    current: Policy['roles'],
  ): Promise<Policy['roles']> {
    const roles: Policy['roles'] = {};
    for (const field of this.spec.roleFields) {
      roles[field] = has(field) ? await validateRoles(field, input[field], s.targets) : (current[field] ?? []);
    }
    return roles;
  }

  /**
   * A policy's row was written or removed in `s`'s transaction: its links and the access of what it
   * selected before and after are derived again, and its full state is announced. Every change of a
   * policy goes through here: the API's, and those the controller makes itself (system policies,
   * roles that named a deleted entity).
   */
  async announce(s: PolicyStores, what: PolicyChangeKind, policy: Policy): Promise<void> {
    await this.access.policyChanged(s.links, s.events, this.spec.kind, policy.id);
    const def = this.spec.events[what];
    await s.events.emit(def, def.schema.parse(policyState(this.spec, policy)));
  }
}
