import { type Db, queryRows } from './database.ts';

/**
 * Which rows one page of an owner's states covers (docs/adr/0008): a condition on the key written
 * with its own `$1…` numbering and the page's size, as `entityStatesPage` builds it from an
 * `entityStates` request (the given ids, or the ids after `after`, ordered bytewise).
 */
export interface StatesPageSelection {
  where: string;
  params: unknown[];
  limit: number;
}

/** Where an owner's states are read from. Every part is SQL written in code, never input. */
export interface StatesPageSource {
  /** The select list (may start with `distinct`). */
  columns: string;
  /** The `from` clause: a table, with its alias when `columns` use one. */
  from: string;
  /** The key the pages follow, ordered bytewise (`collate "C"`): the same order on every database. Default `id`. */
  key?: string;
  /** Narrows the rows before the page (e.g. one router kind); its SQL uses `$1…` for its own parameters. */
  scope?: { sql: string; params: unknown[] };
}

/**
 * The rows of one page of an owner's states, in bytewise key order, read through `db` (the
 * platform's snapshot transaction when answering `entityStates`): what owners' stores answer and
 * read models are rebuilt from, so every owner pages alike.
 */
export async function statesPageRows<R = Record<string, unknown>>(
  db: Db,
  source: StatesPageSource,
  page: StatesPageSelection,
): Promise<R[]> {
  const scope = source.scope ?? { sql: 'true', params: [] };
  const shift = (sql: string, by: number) => sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + by}`);
  const params = [...scope.params, ...page.params, page.limit];
  return queryRows<R>(
    db,
    `select ${source.columns} from ${source.from}
      where (${scope.sql}) and (${shift(page.where, scope.params.length)})
      order by ${source.key ?? 'id'} collate "C" limit $${params.length}`,
    params,
  );
}
