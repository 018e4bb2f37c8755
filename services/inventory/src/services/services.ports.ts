import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ListInput, ListPage, RoleFilter, Service } from '../shared/model.domain.ts';

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
