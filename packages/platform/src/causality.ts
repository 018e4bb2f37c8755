import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestMeta } from '@ziti/contracts';

/** Event source (owning service) → the position of one of its events (docs/adr/0008). */
export type Positions = Record<string, number>;

interface CausalContext {
  produced: Positions;
  /** The operation this work serves (who, from where, which request), when it serves one. */
  meta?: RequestMeta;
}

const context = new AsyncLocalStorage<CausalContext>();

/** Folds `from` into `into`, keeping the greater position per source; returns `into`. */
export function mergePositions(into: Positions, from: Positions | undefined): Positions {
  if (!from) return into;
  for (const [source, position] of Object.entries(from)) {
    if (typeof position === 'number' && Number.isSafeInteger(position) && position > (into[source] ?? 0)) {
      into[source] = position;
    }
  }
  return into;
}

/**
 * Runs `fn` and collects the event positions its writes produced: the commits of this process's
 * units of work and the positions other services reported in their bus replies. The request
 * handlers of every service run inside one, so a write's reply carries what it produced.
 */
export async function trackProduced<T>(fn: () => Promise<T>): Promise<{ result: T; produced: Positions }> {
  const ctx: CausalContext = { produced: {} };
  const result = await context.run(ctx, fn);
  return { result, produced: ctx.produced };
}

/**
 * Like `trackProduced`, but a failure is returned with the positions produced before it (a write
 * may have committed before a later step failed: the caller must still wait for it).
 */
export async function settleProduced<T>(
  fn: () => Promise<T>,
  meta?: RequestMeta,
): Promise<{ ok: true; result: T; produced: Positions } | { ok: false; error: unknown; produced: Positions }> {
  const ctx: CausalContext = meta ? { produced: {}, meta } : { produced: {} };
  try {
    return { ok: true, result: await context.run(ctx, fn), produced: ctx.produced };
  } catch (error) {
    return { ok: false, error, produced: ctx.produced };
  }
}

/** Runs `fn` outside any request (background work must not add positions to whichever request woke it). */
export function outsideRequest<T>(fn: () => T): T {
  return context.exit(fn);
}

/** Records positions produced on behalf of the current request (a no-op outside one). */
export function recordProduced(positions: Positions): void {
  const ctx = context.getStore();
  if (ctx) mergePositions(ctx.produced, positions);
}

export function hasPositions(positions: Positions | undefined): positions is Positions {
  return positions !== undefined && Object.keys(positions).length > 0;
}

/** The operation the current work serves (undefined outside one, and in background work). */
export function currentRequestMeta(): RequestMeta | undefined {
  return context.getStore()?.meta;
}

/**
 * Names the operation the current request serves (the owner does, from the operation request it
 * received); the events its writes emit and the bus requests it makes carry it from then on.
 */
export function setRequestMeta(meta: RequestMeta): void {
  const ctx = context.getStore();
  if (ctx) ctx.meta = meta;
}

/**
 * Runs `fn` on behalf of an operation that did not come through the gateway (a router's request on
 * the control channel): the events its writes emit, and the bus requests it makes, carry `meta`.
 */
export function withRequestMeta<T>(meta: RequestMeta, fn: () => Promise<T>): Promise<T> {
  return context.run({ produced: {}, meta }, fn);
}
