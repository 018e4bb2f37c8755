import { ApiError, type ConfigTypeState, inventoryEventTypes, stringifyValue } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import type { ConfigType, ListInput, ListPage } from '../shared/model.domain.ts';
import { mapOrEmpty, presentIn, requireName } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { builtinConfigTypes } from './builtin-config-types.domain.ts';
import type { SchemaValidator } from './config-types.ports.ts';

export interface ConfigTypeInput {
  name?: string | null;
  schema?: Record<string, unknown> | null;
  tags?: Record<string, unknown> | null;
}

export function configTypeState(t: ConfigType): ConfigTypeState {
  return {
    id: t.id,
    name: t.name,
    schema: t.schema,
    tags: t.tags,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

export async function emitConfigTypeEvent(
  s: InventoryStores,
  what: 'created' | 'updated' | 'deleted',
  type: ConfigType,
): Promise<void> {
  const def =
    what === 'created'
      ? inventoryEventTypes.configTypeCreated
      : what === 'updated'
        ? inventoryEventTypes.configTypeUpdated
        : inventoryEventTypes.configTypeDeleted;
  await s.events.emit(def, configTypeState(type));
}

/** `all` asks for every config type in `configTypes` lists, so no type may be named that. */
export const allConfigTypesKeyword = 'all';

/**
 * Config types: named JSON schemas that configs of the type must satisfy (ZITI-FACTS §7.4);
 * changes are announced (`configType.*`), the built-in types' creation included.
 */
export class ConfigTypeService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly schemas: SchemaValidator,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(input: ListInput): Promise<ListPage<ConfigType>> {
    return this.work((s) => s.configTypes.list(input));
  }

  get(id: string): Promise<ConfigType> {
    return this.work((s) => load(s, id));
  }

  /**
   * The config types a login asks for (`configTypes`: ids, names or `all`) as its API session keeps
   * them, as the reference's MapConfigTypeNamesToIds does: just `all` when any value is `all`;
   * otherwise each value that is a type's id, or the id of the type it names (an id first), once
   * each, in the order sent; a value that is neither is dropped.
   */
  async idsOf(values: string[]): Promise<string[]> {
    if (values.includes(allConfigTypesKeyword)) return [allConfigTypesKeyword];
    const wanted = [...new Set(values)];
    if (wanted.length === 0) return [];
    return this.work(async (s) => {
      const byId = new Set((await s.configTypes.getMany(wanted)).map((t) => t.id));
      const ids = new Set<string>();
      for (const value of wanted) {
        const id = byId.has(value) ? value : (await s.configTypes.findByName(value))?.id;
        if (id !== undefined) ids.add(id);
      }
      return [...ids];
    });
  }

  private validated(input: ConfigTypeInput): { name: string; schema: Record<string, unknown> } {
    const name = requireName(input.name);
    if (name === allConfigTypesKeyword)
      throw ApiError.field('name', `${name} is a keyword and may not be used as a config type name`, name);
    const schema = input.schema ?? {};
    if (Object.keys(schema).length > 0) {
      const problem = this.schemas.schemaProblem(schema);
      if (problem)
        throw new ApiError('COULD_NOT_VALIDATE', {
          field: 'schema',
          reason: `invalid schema ${problem}`,
          value: stringifyValue(schema),
        });
      if (schema.type !== 'object') {
        throw new ApiError('COULD_NOT_VALIDATE', {
          field: 'schema',
          reason: 'invalid config type schema, root type must be object',
          value: stringifyValue(schema),
        });
      }
    }
    return { name, schema };
  }

  async create(input: ConfigTypeInput): Promise<ConfigType> {
    const { name, schema } = this.validated(input);
    const now = this.now();
    const type: ConfigType = {
      id: base62Uuid(),
      name,
      schema,
      tags: mapOrEmpty(input.tags),
      createdAt: now,
      updatedAt: now,
    };
    await this.work(async (s) => {
      await s.configTypes.insert(type);
      await emitConfigTypeEvent(s, 'created', type);
    });
    return type;
  }

  /**
   * Configs already written are not re-validated when the schema changes (as in the reference);
   * the data-integrity check reports those that no longer satisfy it.
   */
  async update(id: string, input: ConfigTypeInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await load(s, id, true);
      const has = presentIn(input, mode);
      const merged: ConfigTypeInput = {
        name: has('name') ? input.name : current.name,
        schema: has('schema') ? input.schema : current.schema,
      };
      const { name, schema } = this.validated(merged);
      const next: ConfigType = {
        ...current,
        name,
        schema,
        tags: has('tags') ? mapOrEmpty(input.tags) : current.tags,
        updatedAt: this.now(),
      };
      await s.configTypes.update(next);
      await emitConfigTypeEvent(s, 'updated', next);
    });
  }

  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await load(s, id, true);
      const used = await s.configTypes.configIds(id, 50);
      if (used.length > 0) {
        const ids = `[${used.join(' ')}]`;
        throw new ApiError('CAN_NOT_DELETE_REFERENCED_ENTITY', {
          field: 'type',
          reason: `entity type configTypes referenced by configs: ${ids}`,
          value: ids,
        });
      }
      await s.configTypes.delete(id);
      await emitConfigTypeEvent(s, 'deleted', { ...current, updatedAt: this.now() });
    });
  }

  /** Writes the built-in types once, at the first start of the first replica (idempotent, race-safe). */
  async seedBuiltins(): Promise<boolean> {
    const now = this.now();
    return this.work(async (s) => {
      if (!(await s.seeds.claim('builtin-config-types'))) return false;
      for (const t of builtinConfigTypes) {
        if (await s.configTypes.get(t.id)) continue;
        const type: ConfigType = { id: t.id, name: t.name, schema: t.schema, tags: {}, createdAt: now, updatedAt: now };
        await s.configTypes.insert(type);
        await emitConfigTypeEvent(s, 'created', type);
      }
      return true;
    });
  }
}

async function load(s: InventoryStores, id: string, forUpdate = false): Promise<ConfigType> {
  const type = await s.configTypes.get(id, { forUpdate });
  if (!type) throw ApiError.notFound('configType', id);
  return type;
}
