import type { LiveApiSession } from '@ziti/platform/sessions/api-session-store';
import type { ListInput, ListPage } from '../shared/model.domain.ts';

/** Consecutive failed password attempts per updb authenticator. */
export interface LoginAttemptStore {
  /** Counts one more failure and answers the count. */
  recordFailure(authenticatorId: string, at: Date): Promise<number>;
  reset(authenticatorId: string): Promise<void>;
}

/** Filters API sessions (which live in Redis) with ZitiQL. */
export interface ApiSessionQuery {
  list(sessions: LiveApiSession[], input: ListInput): Promise<ListPage<LiveApiSession>>;
}

/**
 * The config types a login asks for (`configTypes`: ids, names or `all`), as inventory (their
 * owner) maps them to what an API session keeps: ["all"] for any `all`; otherwise the ids of the
 * types the values are ids or names of, once each (unknown values dropped).
 */
export interface ConfigTypeResolver {
  ids(values: string[]): Promise<string[]>;
}
