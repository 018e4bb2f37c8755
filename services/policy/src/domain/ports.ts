import type { IdentityState } from '@ziti/contracts';

export interface ListInput {
  filter?: string;
  limit?: string | number;
  offset?: string | number;
  sort?: string;
}

export interface ListPage<T> {
  items: T[];
  totalCount: number;
  pagination: { limit: number; offset: number };
  filterableFields: string[];
}

/** policy's copy of auth's identities. */
export interface IdentityReadModel {
  /** Applies a state if `sequence` is newer than what is stored; returns whether it did. */
  apply(state: IdentityState, sequence: number, deleted: boolean): Promise<boolean>;
  roleAttributes(input: ListInput): Promise<ListPage<string>>;
}
