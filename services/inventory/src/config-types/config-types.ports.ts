import type { FieldCause } from '@ziti/contracts';
import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ConfigType, ListInput, ListPage } from '../shared/model.domain.ts';

export interface ConfigTypeStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<ConfigType | null>;
  findByName(name: string): Promise<ConfigType | null>;
  getMany(ids: string[]): Promise<ConfigType[]>;
  insert(type: ConfigType): Promise<void>;
  update(type: ConfigType): Promise<void>;
  /** Deletes a type no config uses; throws CAN_NOT_DELETE_REFERENCED_ENTITY otherwise. */
  delete(id: string): Promise<boolean>;
  list(input: ListInput): Promise<ListPage<ConfigType>>;
  configIds(id: string, limit: number): Promise<string[]>;
  /** One page of config types in id order (bytewise), for owners' state pages. */
  page(after: string | undefined, limit: number, ids?: string[]): Promise<ConfigType[]>;
}

/** JSON Schema checks (config types' schemas and the configs written against them). */
export interface SchemaValidator {
  /** A reason when `schema` is not a usable JSON schema, else null. */
  schemaProblem(schema: Record<string, unknown>): string | null;
  /** The first violation of `schema` by `data` as a field error (field = schema path), else null. */
  violation(schema: Record<string, unknown>, data: unknown): FieldCause | null;
}
