import type { ConfigState } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { ServiceAccessRow, ServiceListScope, Viewer } from './service-view.domain.ts';

/** The read side of the service view: access rows, configs and overrides, all derived or read models. */
export interface ServiceViewStore {
  /** Non-admins: the services of their identity_services rows; admins: every live service. */
  list(viewer: Viewer, input: ListInput, scope: ServiceListScope): Promise<ListPage<ServiceAccessRow>>;
  get(viewer: Viewer, id: string): Promise<ServiceAccessRow | undefined>;
  /** The viewer's access to each of the services (none: false, false). */
  access(viewer: Viewer, serviceIds: string[]): Promise<Map<string, { dial: boolean; bind: boolean }>>;
  /** A live identity by id, else by name. */
  identityByIdOrName(idOrName: string): Promise<{ id: string; isAdmin: boolean } | undefined>;
  /** Ids of the config types named (by id or name); unknown ones are left out. */
  configTypeIds(idsOrNames: string[]): Promise<string[]>;
  configs(ids: string[]): Promise<ConfigState[]>;
  configTypeNames(ids: string[]): Promise<Map<string, string>>;
  /** The identity's service config overrides. */
  overrides(identityId: string): Promise<{ serviceId: string; configId: string }[]>;
  /** Whether any posture check exists in the whole system (ZITI-FACTS §6.3 precision). */
  postureChecksExist(): Promise<boolean>;
  configExists(id: string): Promise<boolean>;
  /** When the identity's service view last changed (`*`: any change, for administrators). */
  lastChange(identityId: string, isAdmin: boolean): Promise<Date | undefined>;
  /** The config types the API session asked for at login (none when policy has not heard of it yet). */
  apiSessionConfigTypes(apiSessionId: string): Promise<string[]>;
  identityCreatedAt(identityId: string): Promise<Date | undefined>;
  /** policy's own event position and its consumers' of auth and inventory, read before the state (docs/adr/0015). */
  positionsReflected(): Promise<Record<string, number>>;
}

export type ServiceViewReader = <T>(fn: (store: ServiceViewStore) => Promise<T>) => Promise<T>;
