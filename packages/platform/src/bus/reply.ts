import { ApiError, type RequestMeta, requestMetaSchema } from '@ziti/contracts';
import {
  DeadlinePassedError,
  type RequestDeadline,
  SaturatedError,
  hasPositions,
  recordProduced,
  remainingBudgetMs,
  settleProduced,
} from '../causality.ts';
import type { Logger } from '../logger.ts';
import { observeRefusedBusRequest } from '../metrics.ts';
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
  /** When the caller stops waiting for the reply (`requestDeadlineOf`): the work's deadline. */
  deadline?: RequestDeadline,
): Promise<BusReply> {
  const settled = await settleProduced(run, meta, deadline);
  const positions = hasPositions(settled.produced) ? { positions: settled.produced } : {};
  if (settled.ok) return { ok: true, result: settled.result, ...positions };
  if (settled.error instanceof ApiError) return { ok: false, error: settled.error.toJSON(), ...positions };
  if (settled.error instanceof DeadlinePassedError || settled.error instanceof SaturatedError) {
    const stage = settled.error instanceof SaturatedError ? 'queue' : settled.error.stage;
    logger.warn({ subject, stage, budgetMs: deadline?.budgetMs }, `request refused: ${settled.error.message}`);
    observeRefusedBusRequest(subject, stage);
    return { ok: false, error: notCarriedOutError(subject).toJSON(), ...positions };
  }
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

/**
 * A write refused because its caller would have stopped waiting before it finished: 503, and
 * nothing of it happened (it was not started, or rolled back before its commit); the caller may
 * send it again (the gateway adds `Retry-After`).
 */
export function notCarriedOutError(subject: string): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', {
    code: 'NOT_CARRIED_OUT',
    message: `${subject.split('.').slice(-1)[0] ?? 'the request'} could not be carried out in time; nothing was changed, try again`,
  });
}

/**
 * The header a bus request carries its deadline in: `<budget ms> <deadline, ms since the epoch>`,
 * how long its sender waits for the reply and until when by the sender's clock.
 */
export const requestDeadlineHeader = 'Ziti-Deadline';

/** Longest budget a request may carry (a larger one is taken as this). */
const maxBudgetMs = 600_000;

/** The header value of a request sent now that waits `budgetMs`. */
export function requestDeadlineHeaderValue(budgetMs: number): string {
  return `${budgetMs} ${Date.now() + budgetMs}`;
}

/**
 * The deadline a header carried, as of its receipt now: none (an older sender, or a malformed
 * header) means no deadline, as before there were any.
 */
export function requestDeadlineOf(header: string | undefined): RequestDeadline | undefined {
  const m = header ? /^(\d{1,15}) (\d{1,15})$/.exec(header) : null;
  if (!m) return undefined;
  const budgetMs = Math.min(Number(m[1]), maxBudgetMs);
  const at = Math.min(Date.now() + budgetMs, Number(m[2]));
  return { at, budgetMs };
}

/**
 * How long a bus request waits: its own timeout (default 10 s), and no longer than the work it is
 * made for still has (`remainingBudgetMs`), so a nested call never outlives its caller's deadline.
 */
export function requestBudgetMs(timeoutMs: number | undefined): number {
  const own = timeoutMs ?? 10_000;
  const remaining = remainingBudgetMs();
  return remaining === undefined ? own : Math.max(1, Math.min(own, remaining));
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
