import type { LockOption } from '@ziti/platform/db/row-lock';
import type { ListInput, ListPage, Terminator } from '../shared/model.domain.ts';

export interface TerminatorStore {
  get(id: string, options?: LockOption): Promise<Terminator | null>;
  insert(terminator: Terminator): Promise<void>;
  update(terminator: Terminator): Promise<void>;
  delete(id: string): Promise<boolean>;
  list(input: ListInput, serviceId?: string): Promise<ListPage<Terminator>>;
}
