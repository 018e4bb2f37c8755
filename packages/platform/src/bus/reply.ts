import { ApiError, type RequestMeta, requestMetaSchema } from '@ziti/contracts';
import { hasPositions, recordProduced, settleProduced } from '../causality.ts';
import type { Logger } from '../logger.ts';
import { dependencyUnavailableError, unavailableDependency } from '../unavailable.ts';
import type { BusReply } from './bus.ts';

/**
 * Runs a handler and turns its outcome into the bus reply form, the one place where a handler's
 * failure is logged: a dependency that is down (the database) is a 503 SERVICE_UNAVAILABLE,
 * other unknown errors become UNHANDLED. The event positions the handler produced travel with
 * the reply (docs/adr/0008).
 */
export async function toBusReply(
  run: () => Promise<unknown>,
  logger: Pick<Logger, 'warn' | 'error'>,
  subject: string,
  /** The operation the request serves, as the caller's context named it (see `causality.ts`). */
  meta?: RequestMeta,
): Promise<BusReply> {
  const settled = await settleProduced(run, meta);
  const positions = hasPositions(settled.produced) ? { positions: settled.produced } : {};
  if (settled.ok) return { ok: true, result: settled.result, ...positions };
  if (settled.error instanceof ApiError) return { ok: false, error: settled.error.toJSON(), ...positions };
  const dependency = unavailableDependency(settled.error);
  if (dependency) {
    logger.warn({ err: settled.error, subject, dependency }, 'request failed: a dependency is not available');
    return { ok: false, error: dependencyUnavailableError(dependency).toJSON(), ...positions };
  }
  logger.error({ err: settled.error, subject }, 'request handler failed');
  return { ok: false, error: new ApiError('UNHANDLED').toJSON(), ...positions };
}

/** The reply's result (or its error, thrown); the positions it carries are recorded for the current request. */
export function fromBusReply(reply: BusReply): unknown {
  if (hasPositions(reply.positions)) recordProduced(reply.positions);
  if (reply.ok) return reply.result;
  throw ApiError.fromJSON(reply.error);
}

/** The reply of a handler whose answer could not be delivered. */
export function toFailure(_err: unknown): BusReply {
  return { ok: false, error: new ApiError('UNHANDLED').toJSON() };
}

/** The header a bus request carries its request meta in (JSON of `RequestMeta`). */
export const requestMetaHeader = 'Ziti-Request-Meta';

/** The request meta a header carried; a malformed one is dropped (the work is then attributed to no request). */
export function requestMetaOf(header: string | undefined): RequestMeta | undefined {
  if (!header) return undefined;
  try {
    const parsed = requestMetaSchema.safeParse(JSON.parse(header));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
