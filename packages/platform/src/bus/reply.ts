import { ApiError } from '@ziti/contracts';
import type { BusReply } from './bus.ts';

/** Runs a handler and turns its outcome into the bus reply form; unknown errors become UNHANDLED. */
export async function toBusReply(run: () => Promise<unknown>, onUnexpected: (err: unknown) => void): Promise<BusReply> {
  try {
    return { ok: true, result: await run() };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, error: err.toJSON() };
    onUnexpected(err);
    return { ok: false, error: new ApiError('UNHANDLED').toJSON() };
  }
}

export function fromBusReply(reply: BusReply): unknown {
  if (reply.ok) return reply.result;
  throw ApiError.fromJSON(reply.error);
}
