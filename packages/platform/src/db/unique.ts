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
    const pg = pgErrorOf(err);
    if (pg?.code === '23505') {
      const constraint = pg.constraint ?? pg.constraint_name ?? '';
      const hit = fields[constraint];
      if (hit) {
        if (hit.error) throw hit.error(hit.value);
        throw new ApiError('COULD_NOT_VALIDATE', {
          field: hit.field,
          reason: `duplicate value '${String(hit.value)}' in unique index on ${hit.store} store`,
          value: String(hit.value),
        });
      }
    }
    throw err;
  }
}
