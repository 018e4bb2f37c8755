import { ApiError, type ConfigState, inventoryEventTypes } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import type { SchemaValidator } from '../config-types/config-types.ports.ts';
import { emitServiceEvent } from '../services/services.domain.ts';
import type { Config, ConfigType, ListInput, ListPage, Service } from '../shared/model.domain.ts';
import { mapOrEmpty, presentIn, requireName } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';

export interface ConfigInput {
  name?: string | null;
  configTypeId?: string | null;
  data?: Record<string, unknown> | null;
  tags?: Record<string, unknown> | null;
}

export function configState(c: Config): ConfigState {
  return {
    id: c.id,
    name: c.name,
    configTypeId: c.configTypeId,
    data: c.data,
    tags: c.tags,
    createdAt: c.createdAt.toISOString(),
    updatedAt: c.updatedAt.toISOString(),
  };
}

export async function emitConfigEvent(
  s: InventoryStores,
  what: 'created' | 'updated' | 'deleted',
  config: Config,
): Promise<void> {
  const def =
    what === 'created'
      ? inventoryEventTypes.configCreated
      : what === 'updated'
        ? inventoryEventTypes.configUpdated
        : inventoryEventTypes.configDeleted;
  await s.events.emit(def, configState(config));
}

/** Configs: data of a config type, validated against the type's JSON schema; changes are announced (`config.*`). */
export class ConfigService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly schemas: SchemaValidator,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(input: ListInput, scope?: { configTypeId?: string; serviceId?: string }): Promise<ListPage<Config>> {
    return this.work((s) => s.configs.list(input, scope));
  }

  get(id: string): Promise<Config> {
    return this.work((s) => loadConfig(s, id));
  }

  /** The types of a set of configs, for their `configType` references. */
  typesOf(configs: Config[]): Promise<Map<string, ConfigType>> {
    return this.work(
      async (s) =>
        new Map((await s.configTypes.getMany([...new Set(configs.map((c) => c.configTypeId))])).map((t) => [t.id, t])),
    );
  }

  /** Lists the configs of a type; 404 when the type does not exist. */
  async listForType(configTypeId: string, input: ListInput): Promise<ListPage<Config>> {
    return this.work(async (s) => {
      if (!(await s.configTypes.get(configTypeId))) throw ApiError.notFound('configType', configTypeId);
      return s.configs.list(input, { configTypeId });
    });
  }

  /** The type is given by its id only: a type's name is refused as an unknown id, as the reference does. */
  private async resolveType(s: InventoryStores, id: string | null | undefined): Promise<ConfigType> {
    if (!id) throw ApiError.field('configTypeId', 'config type must be specified', id);
    const type = await s.configTypes.get(id);
    // The reference names the field by its stored name, `type`.
    if (!type) throw ApiError.field('type', 'invalid config type', id);
    return type;
  }

  private checkData(type: ConfigType, data: Record<string, unknown> | null | undefined): Record<string, unknown> {
    if (data === null || data === undefined || typeof data !== 'object' || Array.isArray(data))
      throw ApiError.field('data', 'data is required', data);
    if (Object.keys(type.schema).length > 0) {
      const violation = this.schemas.violation(type.schema, data);
      if (violation) throw new ApiError('COULD_NOT_VALIDATE', violation);
    }
    return data;
  }

  async create(input: ConfigInput): Promise<Config> {
    const name = requireName(input.name);
    const now = this.now();
    return this.work(async (s) => {
      const type = await this.resolveType(s, input.configTypeId);
      const config: Config = {
        id: base62Uuid(),
        name,
        configTypeId: type.id,
        data: this.checkData(type, input.data),
        tags: mapOrEmpty(input.tags),
        createdAt: now,
        updatedAt: now,
      };
      await s.configs.insert(config);
      await emitConfigEvent(s, 'created', config);
      return config;
    });
  }

  /** The type of a config never changes; its data is validated against the type again. */
  async update(id: string, input: ConfigInput, mode: 'replace' | 'patch'): Promise<void> {
    const now = this.now();
    await this.work(async (s) => {
      const current = await loadConfig(s, id, true);
      const has = presentIn(input, mode);
      const next: Config = { ...current, updatedAt: now };
      if (has('name')) next.name = requireName(input.name);
      if (has('data')) {
        const type = await s.configTypes.get(current.configTypeId);
        if (!type) throw ApiError.notFound('configType', current.configTypeId);
        next.data = this.checkData(type, input.data);
      }
      if (has('tags')) next.tags = mapOrEmpty(input.tags);
      await s.configs.update(next);
      await emitConfigEvent(s, 'updated', next);
      // Services carry their config ids only; a data change is not a service change.
    });
  }

  /**
   * A config in use as an identity's service override can not be deleted (409); services that
   * list it lose it (as the reference unlinks them) and announce their new state.
   */
  async delete(id: string): Promise<void> {
    const now = this.now();
    await this.work(async (s) => {
      const current = await loadConfig(s, id, true);
      const overrides = await s.identityServiceConfigs.countByConfig(id);
      if (overrides > 0) {
        throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          field: 'configs',
          reason: `config ${id} is in use by ${overrides} identity service config(s)`,
          value: id,
        });
      }
      const serviceIds = await s.services.idsUsingConfig(id);
      await s.configs.delete(id);
      await emitConfigEvent(s, 'deleted', { ...current, updatedAt: now });
      for (const service of await s.services.getMany(serviceIds)) {
        const next: Service = { ...service, updatedAt: now };
        await s.services.update(next);
        await emitServiceEvent(s, 'updated', next);
      }
    });
  }
}

export async function loadConfig(s: InventoryStores, id: string, forUpdate = false): Promise<Config> {
  const config = await s.configs.get(id, { forUpdate });
  if (!config) throw ApiError.notFound('config', id);
  return config;
}
