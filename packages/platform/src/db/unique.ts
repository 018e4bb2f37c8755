import { ApiError } from '@ziti/contracts';

/** The Postgres error behind a driver or drizzle error (drizzle wraps driver errors in `cause`). */
export function pgErrorOf(
  err: unknown,
): { code: string; constraint?: string; constraint_name?: string; message?: string } | undefined {
  let e = err as { code?: unknown; cause?: unknown } | undefined;
  for (let i = 0; i < 4 && e; i++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e as never;
    e = e.cause as typeof e;
  }
  return undefined;
}

/** The constraint a Postgres error of SQLSTATE `code` names ('' when it names none); undefined for any other error. */
function violated(err: unknown, code: string): string | undefined {
  const pg = pgErrorOf(err);
  return pg?.code === code ? (pg.constraint ?? pg.constraint_name ?? '') : undefined;
}

/** The constraint behind a unique violation (23505), if that is what `err` is. */
export const uniqueViolation = (err: unknown): string | undefined => violated(err, '23505');

/** The constraint behind a foreign-key violation (23503), if that is what `err` is. */
export const foreignKeyViolation = (err: unknown): string | undefined => violated(err, '23503');

export interface UniqueField {
  field: string;
  store: string;
  value: unknown;
  error?: (value: unknown) => ApiError;
}

/**
 * Runs a write and turns a unique violation of a known constraint into the reference's field
 * error (`duplicate value 'x' in unique index on <store> store`, ZITI-FACTS §2.3).
 */
export async function withUniqueFields<T>(write: () => Promise<T>, fields: Record<string, UniqueField>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const constraint = uniqueViolation(err);
    const hit = constraint === undefined ? undefined : fields[constraint];
    if (hit) {
      if (hit.error) throw hit.error(hit.value);
      throw new ApiError('COULD_NOT_VALIDATE', {
        field: hit.field,
        reason: `duplicate value '${String(hit.value)}' in unique index on ${hit.store} store`,
        value: String(hit.value),
      });
    }
    throw err;
  }
}

/**
 * Runs a write and turns a foreign-key violation of a known constraint (a row that refers to one
 * that is not there, or a delete of a row others refer to) into that constraint's error.
 */
export async function withForeignKeys<T>(write: () => Promise<T>, errors: Record<string, () => ApiError>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const constraint = foreignKeyViolation(err);
    const error = constraint === undefined ? undefined : errors[constraint];
    if (error) throw error();
    throw err;
  }
}
