import { ApiError, type ServiceState, inventoryEventTypes } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { emitIdentityServiceConfigs } from '../identity-service-configs/identity-service-configs.domain.ts';
import type { ListInput, ListPage, RoleFilter, Service } from '../shared/model.domain.ts';
import { assertRoleAttributes, mapOrEmpty, presentIn, requireName } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { removeTerminatorsOf } from '../terminators/terminator-events.domain.ts';

export interface ServiceInput {
  name?: string | null;
  encryptionRequired?: boolean | null;
  configs?: string[] | null;
  roleAttributes?: string[] | null;
  terminatorStrategy?: string | null;
  maxIdleTimeMillis?: number | null;
  tags?: Record<string, unknown> | null;
}

export const defaultTerminatorStrategy = 'smartrouting';
/** The strategies the reference's fabric registers. */
export const terminatorStrategies = ['smartrouting', 'weighted', 'random', 'ha'] as const;

export function serviceState(s: Service): ServiceState {
  return {
    id: s.id,
    name: s.name,
    terminatorStrategy: s.terminatorStrategy,
    roleAttributes: s.roleAttributes,
    configs: s.configs,
    encryptionRequired: s.encryptionRequired,
    maxIdleTimeMillis: s.maxIdleTimeMillis,
    tags: s.tags,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

export async function emitServiceEvent(
  s: InventoryStores,
  what: 'created' | 'updated' | 'deleted',
  service: Service,
): Promise<void> {
  const def =
    what === 'created'
      ? inventoryEventTypes.serviceCreated
      : what === 'updated'
        ? inventoryEventTypes.serviceUpdated
        : inventoryEventTypes.serviceDeleted;
  await s.events.emit(def, serviceState(service));
}

export async function loadService(s: InventoryStores, id: string, forUpdate = false): Promise<Service> {
  const service = await s.services.get(id, { forUpdate });
  if (!service) throw ApiError.notFound('service', id);
  return service;
}

function strategyOf(value: string | null | undefined): string {
  const strategy = value || defaultTerminatorStrategy;
  if (!(terminatorStrategies as readonly string[]).includes(strategy)) {
    throw ApiError.field(
      'terminatorStrategy',
      `invalid terminator strategy '${strategy}': expected one of [${terminatorStrategies.join(' ')}]`,
      strategy,
    );
  }
  return strategy;
}

function idleTimeOf(value: number | null | undefined): number {
  const n = value ?? 0;
  if (!Number.isSafeInteger(n) || n < 0)
    throw ApiError.field('maxIdleTimeMillis', 'maxIdleTimeMillis must be a non-negative integer', value);
  return n;
}

/**
 * Services and the configs they carry. Every change announces the service's full state
 * (`service.*`), from which policy keeps its read model.
 */
export class ServiceCatalog {
  /** Which of `ids` name a service, in the order asked (each once). */
  async existing(ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const found = new Set((await this.work((s) => s.services.getMany(unique))).map((x) => x.id));
    return unique.filter((id) => found.has(id));
  }

  constructor(
    private readonly work: UnitOfWork,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(input: ListInput, scope?: { roleFilter?: RoleFilter; configId?: string }): Promise<ListPage<Service>> {
    return this.work((s) => s.services.list(input, scope));
  }

  get(id: string): Promise<Service> {
    return this.work((s) => loadService(s, id));
  }

  /** Config ids must exist, each at most once, and at most one config per config type (ZITI-FACTS §10.3). */
  private async checkConfigs(s: InventoryStores, ids: string[] | null | undefined): Promise<string[]> {
    const wanted = [...new Set(ids ?? [])];
    if (wanted.length === 0) return [];
    const found = new Map((await s.configs.getMany(wanted)).map((c) => [c.id, c]));
    const byType = new Map<string, string>();
    for (const id of wanted) {
      const config = found.get(id);
      if (!config)
        throw new ApiError('NOT_FOUND', { field: 'configs', reason: `config with id ${id} not found`, value: id });
      const other = byType.get(config.configTypeId);
      if (other) {
        const types = await s.configTypes.getMany([config.configTypeId]);
        throw ApiError.field(
          'configs',
          `duplicate configs named ${found.get(other)!.name} and ${config.name} found for config type ${types[0]?.name ?? config.configTypeId}. Only one config of a given typed is allowed per service`,
          wanted,
        );
      }
      byType.set(config.configTypeId, id);
    }
    return wanted;
  }

  async create(input: ServiceInput): Promise<Service> {
    const now = this.now();
    const base = {
      id: base62Uuid(),
      name: requireName(input.name),
      terminatorStrategy: strategyOf(input.terminatorStrategy),
      roleAttributes: assertRoleAttributes(input.roleAttributes),
      encryptionRequired: input.encryptionRequired ?? true,
      maxIdleTimeMillis: idleTimeOf(input.maxIdleTimeMillis),
      tags: mapOrEmpty(input.tags),
      createdAt: now,
      updatedAt: now,
    };
    return this.work(async (s) => {
      const service: Service = { ...base, configs: await this.checkConfigs(s, input.configs) };
      await s.services.insert(service);
      await emitServiceEvent(s, 'created', service);
      return service;
    });
  }

  /**
   * PUT sets every updatable field, PATCH those given. `encryptionRequired`, which the spec calls
   * "set at create", is as the reference treats it: a PUT sets it (false when absent: its store
   * writes every field of a replace), a PATCH never changes it (its service manager drops the field).
   */
  async update(id: string, input: ServiceInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await loadService(s, id, true);
      const has = presentIn(input, mode);
      const next: Service = { ...current, updatedAt: this.now() };
      if (has('name')) next.name = requireName(input.name);
      if (has('terminatorStrategy')) next.terminatorStrategy = strategyOf(input.terminatorStrategy);
      if (has('roleAttributes')) next.roleAttributes = assertRoleAttributes(input.roleAttributes);
      if (has('configs')) next.configs = await this.checkConfigs(s, input.configs);
      if (has('maxIdleTimeMillis')) next.maxIdleTimeMillis = idleTimeOf(input.maxIdleTimeMillis);
      if (mode === 'replace') next.encryptionRequired = input.encryptionRequired ?? false;
      if (has('tags')) next.tags = mapOrEmpty(input.tags);
      await s.services.update(next);
      await emitServiceEvent(s, 'updated', next);
    });
  }

  /**
   * Its terminators (each announced) and identity config overrides go with it (the identities' new
   * lists are announced).
   */
  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await loadService(s, id, true);
      await removeTerminatorsOf(s, { serviceId: id }, this.now());
      const overridden = await s.identityServiceConfigs.identityIdsByService(id);
      await s.services.delete(id);
      await emitServiceEvent(s, 'deleted', { ...current, updatedAt: this.now() });
      await emitIdentityServiceConfigs(s, overridden);
    });
  }
}
