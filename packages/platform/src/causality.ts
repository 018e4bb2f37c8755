import { AsyncLocalStorage } from 'node:async_hooks';
import type { RequestMeta } from '@ziti/contracts';

/** Event source (owning service) → the position of one of its events (docs/adr/0008). */
export type Positions = Record<string, number>;

interface CausalContext {
  produced: Positions;
  /** The operation this work serves (who, from where, which request), when it serves one. */
  meta?: RequestMeta;
  /**
   * When the caller stops waiting for this work (this process's clock, ms since the epoch): the
   * bus request's budget from its receipt. Writes neither start nor commit past it (`checkDeadline`).
   */
  deadline?: number;
  /** What a write keeps in hand before `deadline` (`deadlineMarginMs` of the budget). */
  deadlineMarginMs?: number;
  /** A unit of work of this request committed here (with or without events). */
  committed?: boolean;
  /**
   * The caller's `Idempotency-Key` of this write (db/idempotency.ts): the request's first unit of
   * work claims it in its own transaction (`claimed` once that committed).
   */
  idempotency?: { claim: IdempotencyClaim; claimed: boolean };
}

/** A write sent with an `Idempotency-Key`, as its owner keeps it (db/idempotency.ts). */
export interface IdempotencyClaim {
  /** Whose key it is (the caller's identity): keys of different callers never meet. */
  caller: string;
  key: string;
  operation: string;
  /** What the write asked for (its operation and input), to refuse the key with other input. */
  fingerprint: string;
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
  /** When the caller stops waiting for the work (`RequestDeadline`); none: no deadline. */
  deadline?: RequestDeadline,
): Promise<{ ok: true; result: T; produced: Positions } | { ok: false; error: unknown; produced: Positions }> {
  const ctx: CausalContext = { produced: {}, ...(meta ? { meta } : {}) };
  if (deadline) {
    ctx.deadline = deadline.at;
    ctx.deadlineMarginMs = deadlineMarginMs(deadline.budgetMs);
  }
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

/** Records that a unit of work of the current request committed (a no-op outside one). */
export function recordCommitted(): void {
  const ctx = context.getStore();
  if (ctx) ctx.committed = true;
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

/**
 * When a bus request's sender stops waiting (this process's clock, ms since the epoch) and the budget
 * it was sent with: the earlier of its receipt plus the budget and the deadline the sender stamped
 * (a request that waited in a stalled process before it was read is late by that much). The hosts'
 * clocks are taken to agree within the margin, as token expiry checks take them to.
 */
export interface RequestDeadline {
  at: number;
  budgetMs: number;
}

/**
 * How long the current work's caller still waits (ms; at most `0`), or undefined without a
 * deadline (background work): a bus request made on its behalf waits no longer than that.
 */
export function remainingBudgetMs(): number | undefined {
  const deadline = context.getStore()?.deadline;
  return deadline === undefined ? undefined : Math.max(0, deadline - Date.now());
}

/**
 * What a write keeps in hand before its caller's deadline: to commit and for the answer to travel
 * back. A tenth of the budget, between 100 ms and 1 s.
 */
export function deadlineMarginMs(budgetMs: number): number {
  return Math.min(1_000, Math.max(100, Math.round(budgetMs / 10)));
}

/**
 * The work's caller would have stopped waiting by the time it finished: it was not started, or was
 * rolled back before its commit, so nothing of it happened and the caller may send it again.
 */
export class DeadlinePassedError extends Error {
  constructor(readonly stage: 'start' | 'commit') {
    super(`the request's deadline passed before its ${stage === 'start' ? 'work could start' : 'commit'}`);
    this.name = 'DeadlinePassedError';
  }
}

/**
 * Throws `DeadlinePassedError` when the current work's deadline, less its margin, has passed: a
 * write checks before it starts and before it commits, so a caller that gave up (a 503 TIMEOUT)
 * never sees its write happen afterwards, and one still waiting learns that nothing happened.
 */
export function checkDeadline(stage: 'start' | 'commit'): void {
  const ctx = context.getStore();
  if (!refusable() || ctx?.deadline === undefined) return;
  if (Date.now() > ctx.deadline - (ctx.deadlineMarginMs ?? 0)) throw new DeadlinePassedError(stage);
}

/**
 * Whether the current work may still be refused as not carried out: a caller waits for it (it has
 * a deadline) and nothing of it committed yet, here or at a service it called (refusing then would
 * say that nothing happened). Background work is never refused.
 */
export function refusable(): boolean {
  const ctx = context.getStore();
  return ctx?.deadline !== undefined && !ctx.committed && !hasPositions(ctx.produced);
}

/**
 * A request's write refused before it started because the service is saturated (more requests
 * already wait for a database connection than it admits): nothing of it happened.
 */
export class SaturatedError extends Error {
  constructor(readonly resource: string) {
    super(`too many requests wait for ${resource}`);
    this.name = 'SaturatedError';
  }
}

/** Makes the current request's writes claim `claim` (db/idempotency.ts `IdempotentReplies`). */
export function setIdempotencyClaim(claim: IdempotencyClaim): void {
  const ctx = context.getStore();
  if (ctx) ctx.idempotency = { claim, claimed: false };
}

/** The claim the current request's next unit of work must make in its transaction, if any. */
export function pendingIdempotencyClaim(): IdempotencyClaim | undefined {
  const i = context.getStore()?.idempotency;
  return i && !i.claimed ? i.claim : undefined;
}

/** The unit of work that made the claim committed. */
export function markIdempotencyClaimed(): void {
  const i = context.getStore()?.idempotency;
  if (i) i.claimed = true;
}

/** Whether the current request's claim committed (its outcome is then the one a repeat gets). */
export function idempotencyClaimed(): boolean {
  return context.getStore()?.idempotency?.claimed ?? false;
}
