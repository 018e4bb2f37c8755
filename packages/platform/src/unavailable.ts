import { ApiError } from '@ziti/contracts';

/** A dependency of a service that can be down while the service itself runs. */
export type Dependency = 'database' | 'redis';

/** SQLSTATEs of a lost or refused database connection (class 08, shutdown, too many connections). */
const databaseGone = /^(08...|57P0[1-3]|53300)$/;
/** What pg and pg-pool say when a connection dropped under a query or a checked-out client. */
const databaseGoneMessages = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Client was closed and is not queryable',
];
/**
 * Socket errors count as the database's only under a failed statement (a connection the pool
 * could not make at all is a `DependencyUnavailableError`).
 */
const systemCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** A dependency could not be reached at all (e.g. no connection to the database could be made). */
export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: Dependency,
    cause: unknown,
  ) {
    super(`the ${dependency} is not available`, { cause });
    this.name = 'DependencyUnavailableError';
  }
}

/**
 * The dependency whose outage caused `err` (its cause chain is searched), or undefined when the
 * error is something else. Such a failure is a 503 for the caller, not a 500.
 */
export function unavailableDependency(err: unknown): Dependency | undefined {
  let e = err as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown; query?: unknown } | undefined;
  let statement = false;
  for (let i = 0; i < 5 && e && typeof e === 'object'; i++) {
    if (e instanceof DependencyUnavailableError) return e.dependency;
    if (e.name === 'MaxRetriesPerRequestError') return 'redis';
    const message = typeof e.message === 'string' ? e.message : '';
    // drizzle's and PGlite's errors name the statement that failed.
    statement ||= typeof e.query === 'string';
    if (typeof e.code === 'string' && databaseGone.test(e.code)) return 'database';
    if (databaseGoneMessages.some((m) => message.startsWith(m))) return 'database';
    if (statement && typeof e.code === 'string' && systemCodes.has(e.code)) return 'database';
    e = e.cause as typeof e;
  }
  return undefined;
}

/** The API error of a dependency that is down: 503 SERVICE_UNAVAILABLE with the error envelope. */
export function dependencyUnavailableError(dependency: Dependency): ApiError {
  return new ApiError('SERVICE_UNAVAILABLE', {
    code: 'SERVICE_UNAVAILABLE',
    message: `the ${dependency} is not available, try again later`,
  });
}
