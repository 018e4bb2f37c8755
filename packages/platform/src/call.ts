import {
  ApiError,
  type CallAnswer,
  type CallContract,
  type CallPayload,
  type CallReply,
  type CallRequest,
  subjects,
} from '@ziti/contracts';
import type { Bus } from './bus/bus.ts';
import { NoRespondersError, RequestTimeoutError } from './bus/bus.ts';

/** Service-to-service calls stay inside the gateway's 10 s budget by default. */
export const defaultCallTimeoutMs = 8_000;

/**
 * A call that only reads (`repeatable`) is sent again after this long without a reply, up to
 * `callSends` sends, and the first reply wins: a callee replica killed or frozen with the call in
 * flight costs the caller about this, not the whole timeout (issue 25). NATS spreads each send over
 * the callee's replicas, so a second send usually reaches a live one. A call that writes is sent once.
 */
export const callRepeatAfterMs = 1_500;
/** The most sends of a repeatable call: the first, and two more while no reply came. */
export const callSends = 3;

/**
 * A call to another service (`ziti.rpc.<owner>.call.<action>`) as its contract declares it
 * (packages/contracts/src/service-calls.ts), re-sent while unanswered when it only reads
 * (`callRepeatAfterMs`; `repeatAfterMs: 0` sends it once): a down or slow owner becomes the API's 503 codes,
 * never a 500; a reply that does not match the contract is UNHANDLED; the event positions the
 * callee's writes produced are recorded for the current request (docs/adr/0008).
 */
export async function callService<C extends CallContract>(
  bus: Bus,
  owner: C['servedBy'][number],
  contract: C,
  request: CallRequest<C>,
  options: { timeoutMs?: number; repeatAfterMs?: number } = {},
): Promise<CallReply<C>> {
  let result: unknown;
  const repeatAfterMs = options.repeatAfterMs ?? callRepeatAfterMs;
  try {
    result = await bus.request(subjects.call(owner, contract.action), request, {
      timeoutMs: options.timeoutMs ?? defaultCallTimeoutMs,
      ...(contract.repeatable && repeatAfterMs > 0 ? { retry: { afterMs: repeatAfterMs, attempts: callSends } } : {}),
    });
  } catch (err) {
    throw busFailureError(err, owner, contract.action);
  }
  const parsed = contract.reply.safeParse(result);
  if (!parsed.success) throw new ApiError('UNHANDLED', `${owner}.${contract.action} answered an unexpected shape`);
  // `C['reply']` parses to `CallReply<C>`; TypeScript does not resolve zod's output of a type parameter.
  return parsed.data as CallReply<C>;
}

/** The calls a service serves, by action, as `serveCalls` dispatches them. */
export type CallTable = Record<string, (payload: unknown) => Promise<unknown>>;

/** The handler of one call: its request as the contract's schema parsed it, and the answer it declares. */
export type CallHandler<C extends CallContract> = (request: CallPayload<C>) => Promise<CallAnswer<C>>;

/**
 * The table of the calls `contracts` declares, one handler each (the compiler checks none is
 * missing), each parsing its request with its contract's schema: a malformed request is
 * COULD_NOT_VALIDATE, with the first problem.
 */
export function callHandlers<T extends Record<string, CallContract>>(
  contracts: T,
  handlers: { [K in keyof T]: CallHandler<T[K]> },
): CallTable {
  const table: CallTable = {};
  for (const [name, contract] of Object.entries(contracts)) {
    const handle = handlers[name as keyof T] as (request: unknown) => Promise<unknown>;
    table[contract.action] = async (payload) => {
      const parsed = contract.request.safeParse(payload);
      if (!parsed.success) {
        throw new ApiError('COULD_NOT_VALIDATE', {
          code: 'COULD_NOT_VALIDATE',
          message: `malformed ${contract.action} request: ${parsed.error.issues[0]?.message ?? ''}`,
        });
      }
      return handle(parsed.data);
    };
  }
  return table;
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
