import { ApiError, type Owner, subjects } from '@ziti/contracts';
import type { Bus } from './bus/bus.ts';
import { NoRespondersError, RequestTimeoutError } from './bus/bus.ts';

/** Service-to-service calls stay inside the gateway's 10 s budget by default. */
export const defaultCallTimeoutMs = 8_000;

/**
 * A call to another service (`ziti.rpc.<owner>.call.<action>`): a down or slow owner becomes the
 * API's 503 codes, never a 500; a result that does not match the contract's `schema` is UNHANDLED;
 * the event positions the callee's writes produced are recorded for the current request
 * (docs/adr/0008).
 */
export async function callService<T = unknown>(
  bus: Bus,
  owner: Exclude<Owner, 'gateway'>,
  action: string,
  payload: unknown,
  options: { timeoutMs?: number; schema?: ReplySchema<T> } = {},
): Promise<T> {
  let result: unknown;
  try {
    result = await bus.request(subjects.call(owner, action), payload, {
      timeoutMs: options.timeoutMs ?? defaultCallTimeoutMs,
    });
  } catch (err) {
    throw busFailureError(err, owner, action);
  }
  if (!options.schema) return result as T;
  const parsed = options.schema.safeParse(result);
  if (!parsed.success) throw new ApiError('UNHANDLED', `${owner}.${action} answered an unexpected shape`);
  return parsed.data;
}

/**
 * The API error of a bus request that failed on the way (the owner is down: 503
 * SERVICE_UNAVAILABLE; it did not answer in time: 503 TIMEOUT); any other error is returned as is.
 * The one mapping of bus failures: `callService` uses it, and so can a caller that sends on the
 * bus itself (the gateway's dispatch of operations).
 */
export function busFailureError(err: unknown, owner: string, action: string): unknown {
  if (err instanceof NoRespondersError)
    return new ApiError('SERVICE_UNAVAILABLE', { code: 'SERVICE_UNAVAILABLE', message: `${owner} is not available` });
  if (err instanceof RequestTimeoutError)
    return new ApiError('TIMEOUT', { code: 'TIMEOUT', message: `${owner} did not answer ${action} in time` });
  return err;
}

/** The contract schema of a call's result (a zod schema, structurally). */
export interface ReplySchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false };
}
