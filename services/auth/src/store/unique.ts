import { ApiError } from '@ziti/contracts';

/** The Postgres error behind a drizzle error (drizzle wraps driver errors in `cause`). */
function pgError(err: unknown): { code?: string; constraint?: string; constraint_name?: string } | undefined {
  let e = err as { code?: string; cause?: unknown } | undefined;
  for (let i = 0; i < 4 && e; i++) {
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return e as never;
    e = e.cause as typeof e;
  }
  return undefined;
}

/**
 * Runs a write and turns a unique violation into the reference's field error
 * (`duplicate value 'x' in unique index on <store> store`, ZITI-FACTS §2.3).
 */
export async function withUniqueFields<T>(
  write: () => Promise<T>,
  fields: Record<string, { field: string; store: string; value: unknown; error?: (value: unknown) => ApiError }>,
): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const pg = pgError(err);
    if (pg?.code === '23505') {
      const constraint = pg.constraint ?? pg.constraint_name ?? '';
      const hit = fields[constraint] ?? Object.values(fields).find((f) => String((err as Error).message).includes(f.field));
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
