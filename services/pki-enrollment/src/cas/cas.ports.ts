import type { LockOption } from '@ziti/platform/db/row-lock';
import type { Ca, ListInput, ListPage } from '../shared/model.domain.ts';

export interface CaStore {
  /** `forUpdate` locks the row until the unit of work ends (every read-modify-write and delete). */
  get(id: string, options?: LockOption): Promise<Ca | null>;
  /** Every CA (there are few); chain checks look at all of them. */
  all(): Promise<Ca[]>;
  list(input: ListInput): Promise<ListPage<Ca>>;
  insert(ca: Ca): Promise<void>;
  update(ca: Ca): Promise<void>;
  delete(id: string): Promise<boolean>;
  names(ids: string[]): Promise<Map<string, string>>;
}
