import type { RouterApiSession } from '@ziti/contracts';

/** What fabric needs of auth, which owns API sessions. */
export interface ApiSessionSource {
  /** A page of live sessions from `cursor` (absent: the first); `next` null on the last. */
  page(cursor: string | undefined, limit: number): Promise<{ sessions: RouterApiSession[]; next: string | null }>;
  of(identityIds: string[]): Promise<RouterApiSession[]>;
  /** Slides the sessions' expiry; answers the tokens that are no longer live. */
  touch(tokens: string[]): Promise<string[]>;
}
