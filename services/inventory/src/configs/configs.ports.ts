import type { LockOption } from '@ziti/platform/db/row-lock';
import type { Config, ListInput, ListPage } from '../shared/model.domain.ts';

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
