import { ApiError } from '@ziti/contracts';
import { hasPositions, recordProduced, trackProduced } from '../causality.ts';
import type { BusReply } from './bus.ts';

/**
 * Runs a handler and turns its outcome into the bus reply form; unknown errors become UNHANDLED.
 * The event positions the handler produced travel with the reply (docs/adr/0008).
 */
export async function toBusReply(run: () => Promise<unknown>, onUnexpected: (err: unknown) => void): Promise<BusReply> {
  let produced: Record<string, number> = {};
  try {
    const tracked = await trackProduced(run);
    produced = tracked.produced;
    return { ok: true, result: tracked.result, ...(hasPositions(produced) ? { positions: produced } : {}) };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, error: err.toJSON() };
    onUnexpected(err);
    return { ok: false, error: new ApiError('UNHANDLED').toJSON() };
  }
}

/** The reply's result (or its error, thrown); the positions it carries are recorded for the current request. */
export function fromBusReply(reply: BusReply): unknown {
  if (hasPositions(reply.positions)) recordProduced(reply.positions);
  if (reply.ok) return reply.result;
  throw ApiError.fromJSON(reply.error);
}
