// `GET /extensions/audit-records/export`: which pages of `listAuditRecords` make the export, and the
// JSON lines they become. Pure: the transport asks the audit service and writes the socket.

import { type SortField, parseQuery, tokenize, zitiqlString, MAX_LIMIT, MAX_OFFSET } from '@ziti/zitiql';

/** Records asked for per page (the list's largest page). */
export const exportPageSize = MAX_LIMIT;

/**
 * How an export pages through the trail. Oldest first (`at`, then `id`) unless the caller sorts:
 * then by keyset (each page starts after the last record of the one before), as deep as the trail
 * goes. A caller's own sort pages by offset instead, which the list allows up to `MAX_OFFSET`.
 */
export interface ExportPlan {
  /** The filter's condition as written (without its sort, skip and limit); undefined: everything. */
  readonly condition?: string;
  /** The caller's order: its `sort by` clause; the `sort` parameter travels as it came. */
  readonly sort: readonly SortField[];
  readonly sortParam?: string;
  readonly keyset: boolean;
  /** Records of the selection to leave out first (`skip N`). */
  readonly skip: number;
  /** At most this many records (`limit N`); undefined: all (`limit none` too). */
  readonly limit?: number;
}

/** Where the next page starts. */
export type ExportCursor =
  | { readonly kind: 'start' }
  | { readonly kind: 'after'; readonly at: string; readonly id: string }
  | { readonly kind: 'offset'; readonly offset: number };

/**
 * The plan for a caller's `filter` and `sort`. The filter is parsed here so that a syntax error is
 * answered with its own positions; what it names is checked by the list (the same 400 as the list).
 */
export function exportPlanOf(filter: string | undefined, sortParam: string | undefined): ExportPlan {
  const blank = filter === undefined || filter.trim() === '';
  const query = blank ? undefined : parseQuery(filter);
  const condition = blank ? undefined : conditionText(filter).trim() || undefined;
  const sort = query?.sort ?? [];
  const hasSortParam = sortParam !== undefined && sortParam.trim() !== '';
  const limit = query?.limit;
  return {
    ...(condition !== undefined ? { condition } : {}),
    sort,
    ...(hasSortParam ? { sortParam } : {}),
    keyset: sort.length === 0 && !hasSortParam,
    skip: Math.max(0, query?.skip ?? 0),
    ...(limit !== undefined && limit >= 0 ? { limit } : {}),
  };
}

/** The filter up to its first `sort by`, `skip` or `limit` outside parentheses (a subquery's own stay). */
function conditionText(filter: string): string {
  let depth = 0;
  for (const token of tokenize(filter)) {
    if (token.type === 'LPAREN') depth++;
    else if (token.type === 'RPAREN') depth--;
    else if (depth === 0 && (token.type === 'SORT' || token.type === 'SKIP' || token.type === 'LIMIT'))
      return filter.slice(0, token.offset);
  }
  return filter;
}

/** The `filter` (and `sort`) of the page that starts at `cursor`; undefined when the export may not go on. */
export function pageQuery(
  plan: ExportPlan,
  cursor: ExportCursor,
  pageSize = exportPageSize,
): { filter: string; sort?: string } | undefined {
  const condition = plan.condition === undefined ? 'true' : `(${plan.condition})`;
  if (plan.keyset) {
    const order = 'sort by at asc, id asc';
    if (cursor.kind === 'after') {
      const at = `datetime(${cursor.at})`;
      const after = `(at > ${at} or (at = ${at} and id > ${zitiqlString(cursor.id)}))`;
      return { filter: `${condition} and ${after} ${order} limit ${pageSize}` };
    }
    const skip = plan.skip > 0 ? ` skip ${plan.skip}` : '';
    return { filter: `${condition} ${order}${skip} limit ${pageSize}` };
  }
  const offset = cursor.kind === 'offset' ? cursor.offset : plan.skip;
  if (offset > MAX_OFFSET) return undefined;
  const order = plan.sort.length > 0 ? ` sort by ${plan.sort.map((s) => `${s.field} ${s.direction}`).join(', ')}` : '';
  return {
    filter: `${condition}${order}${offset > 0 ? ` skip ${offset}` : ''} limit ${pageSize}`,
    ...(plan.sortParam !== undefined ? { sort: plan.sortParam } : {}),
  };
}

/** The cursor after a page of `count` records whose last one is `last`. */
export function nextCursor(
  plan: ExportPlan,
  cursor: ExportCursor,
  count: number,
  last: { at: string; id: string } | undefined,
): ExportCursor {
  if (plan.keyset) return last ? { kind: 'after', at: last.at, id: last.id } : cursor;
  const offset = cursor.kind === 'offset' ? cursor.offset : plan.skip;
  return { kind: 'offset', offset: offset + count };
}

/** One record as a JSON line. */
export function ndjsonLine(record: unknown): string {
  return `${JSON.stringify(record)}\n`;
}
