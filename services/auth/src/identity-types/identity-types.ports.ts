import type { ListInput, ListPage, NamedEntity } from '../shared/model.domain.ts';

export interface IdentityTypeStore {
  get(id: string): Promise<NamedEntity | null>;
  list(input: ListInput): Promise<ListPage<NamedEntity>>;
  insertIfAbsent(type: NamedEntity): Promise<void>;
}
