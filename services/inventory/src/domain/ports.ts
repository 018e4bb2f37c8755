import type { FieldCause } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type { LockOption } from '@ziti/platform/db/row-lock';
import type {
  Config,
  ConfigType,
  IdentityServiceConfig,
  ListInput,
  ListPage,
  NamedRef,
  RoleFilter,
  Router,
  RouterKind,
  Service,
  Terminator,
} from './model.ts';

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

export interface ConfigStore {
  get(id: string, options?: LockOption): Promise<Config | null>;
  getMany(ids: string[]): Promise<Config[]>;
  insert(config: Config): Promise<void>;
  update(config: Config): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** `configTypeId` narrows to one type's configs, `serviceId` to one service's. */
  list(input: ListInput, scope?: { configTypeId?: string; serviceId?: string }): Promise<ListPage<Config>>;
  /** Every config of a type, for re-validation (bounded by the caller). */
  listByType(configTypeId: string, after: string | undefined, limit: number): Promise<Config[]>;
  /** One page of configs in id order (bytewise), for owners' state pages. */
  page(after: string | undefined, limit: number, ids?: string[]): Promise<Config[]>;
}

export interface ServiceStore {
  get(id: string, options?: LockOption): Promise<Service | null>;
  getMany(ids: string[]): Promise<Service[]>;
  insert(service: Service): Promise<void>;
  update(service: Service): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput, scope?: { roleFilter?: RoleFilter; configId?: string }): Promise<ListPage<Service>>;
  /** Ids of the services that list a config. */
  idsUsingConfig(configId: string): Promise<string[]>;
  /** One page of services in id order (bytewise), for owners' state pages. */
  page(after: string | undefined, limit: number, ids?: string[]): Promise<Service[]>;
}

export interface RouterStore {
  get(id: string, kind?: RouterKind, options?: LockOption): Promise<Router | null>;
  findByFingerprint(fingerprint: string): Promise<Router | null>;
  insert(router: Router): Promise<void>;
  update(router: Router): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** `kind` narrows to edge or transit routers; undefined lists every router. */
  list(kind: RouterKind | undefined, input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Router>>;
  names(ids: string[]): Promise<NamedRef[]>;
  page(kind: RouterKind, after: string | undefined, limit: number, ids?: string[]): Promise<Router[]>;
}

export interface TerminatorStore {
  get(id: string, options?: LockOption): Promise<Terminator | null>;
  insert(terminator: Terminator): Promise<void>;
  update(terminator: Terminator): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput, serviceId?: string): Promise<ListPage<Terminator>>;
}

export interface IdentityServiceConfigStore {
  listByIdentity(identityId: string): Promise<IdentityServiceConfig[]>;
  /** The overrides of several identities. */
  listByIdentities(identityIds: string[]): Promise<IdentityServiceConfig[]>;
  /** Distinct identity ids with an override for the service. */
  identityIdsByService(serviceId: string): Promise<string[]>;
  /** Sets the identity's config of that type for that service, replacing one of the same type. */
  upsert(link: IdentityServiceConfig): Promise<void>;
  delete(identityId: string, serviceId: string, configId: string): Promise<number>;
  deleteByIdentity(identityId: string): Promise<number>;
  /** Distinct identity ids with overrides, one page in id order (bytewise); `ids` narrows to those. */
  identityIds(after: string | undefined, limit: number, ids?: string[]): Promise<string[]>;
  countByConfig(configId: string): Promise<number>;
}

export interface SeedStore {
  /** Marks a piece of first-start data as written; false when it already was. */
  claim(name: string): Promise<boolean>;
}

/** The stores of one transaction and the events that leave with it. */
export interface InventoryStores {
  seeds: SeedStore;
  configTypes: ConfigTypeStore;
  configs: ConfigStore;
  services: ServiceStore;
  routers: RouterStore;
  terminators: TerminatorStore;
  identityServiceConfigs: IdentityServiceConfigStore;
  events: EventSink;
}

export type UnitOfWork = <T>(fn: (stores: InventoryStores) => Promise<T>) => Promise<T>;

/** JSON Schema checks (config types' schemas and the configs written against them). */
export interface SchemaValidator {
  /** A reason when `schema` is not a usable JSON schema, else null. */
  schemaProblem(schema: Record<string, unknown>): string | null;
  /** The first violation of `schema` by `data` as a field error (field = schema path), else null. */
  violation(schema: Record<string, unknown>, data: unknown): FieldCause | null;
}

/** Which identities exist (auth owns them). */
export interface IdentityDirectory {
  /** The subset of `ids` that exist. */
  existing(ids: string[]): Promise<Set<string>>;
}
