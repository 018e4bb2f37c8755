/**
 * Decoders of raw SQL row values, one set for every store. Pure (no driver): the same column can
 * arrive in two forms. node-postgres parses jsonb into objects, and drizzle's `mode: 'date'`
 * columns are `Date`s; `queryRows` answers timestamps as Postgres' text (both drivers), and PGlite
 * may answer json as a string. Each decoder takes either form.
 */

/** A timestamp column: a `Date` as it is, Postgres' text (or anything else) through `new Date`. */
export const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));

/** A nullable timestamp column: null for SQL null (or an absent key), else `date`. */
export const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));

/**
 * A json/jsonb column: parsed when it arrives as text, as it is when the driver parsed it. SQL
 * null (or an absent key) is `fallback` when one is given, else the value as it came.
 */
export function json<T>(v: unknown, fallback?: T): T {
  if (v === null || v === undefined) return (fallback === undefined ? v : fallback) as T;
  return (typeof v === 'string' ? JSON.parse(v) : v) as T;
}

/** A nullable text column: null for SQL null (or an absent key), else its text. */
export const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
