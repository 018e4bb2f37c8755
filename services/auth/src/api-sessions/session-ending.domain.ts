import type { ApiSessionDeleteReason } from '@ziti/contracts';
import type { ApiSessionRecord } from '@ziti/platform/sessions/api-session-store';
import type { EventSink } from '@ziti/platform/event-sink';
import type { SessionStore } from '../shared/stores.ports.ts';
import { emitApiSessionDeleted } from './api-session-events.domain.ts';

/** Whose sessions end: every one of an identity, or only those made with one of its authenticators. */
export interface SessionScope {
  identityId: string;
  authenticatorId?: string;
}

type Work<S> = <T>(fn: (stores: S) => Promise<T>) => Promise<T>;

/**
 * Ends API sessions together with the change that takes away what they stand on (the identity,
 * or the authenticator they were made with), in the order that never loses an end
 * (api-session-events.domain.ts): the sessions end in the store first (their tokens stop
 * working), `apiSession.deleted` commits in the change's unit of work, then their tombstones are
 * dropped. A login that passed its checks before the change committed may have opened a session
 * meanwhile: a second pass ends it too.
 */
export class SessionEnding {
  constructor(
    private readonly sessions: Pick<SessionStore, 'endByIdentity' | 'forget'>,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async around<S extends { events: EventSink }, T>(
    work: Work<S>,
    scope: SessionScope,
    reason: ApiSessionDeleteReason,
    change: (s: S) => Promise<T>,
  ): Promise<T> {
    const ended = await this.end(scope, reason);
    const endedAt = this.now();
    const result = await work(async (s) => {
      const value = await change(s);
      for (const r of ended) await emitApiSessionDeleted(s.events, r, reason, endedAt);
      return value;
    });
    await this.forget(ended);
    const late = (await this.end(scope, reason)).filter((r) => !ended.some((e) => e.id === r.id));
    if (late.length > 0) {
      await work(async (s) => {
        for (const r of late) await emitApiSessionDeleted(s.events, r, reason, this.now());
      });
      await this.forget(late);
    }
    return result;
  }

  /**
   * Ends the sessions inside a unit of work that is already open (an event consumer's): they are
   * announced with it, and their tombstones stay until the sweeper finds them past their grace
   * (announcing them once more: a duplicate end, which every consumer takes). A redelivery ends
   * nothing new and announces the same sessions again.
   */
  async within(events: EventSink, scope: SessionScope, reason: ApiSessionDeleteReason): Promise<void> {
    const ended = await this.end(scope, reason);
    const endedAt = this.now();
    for (const r of ended) await emitApiSessionDeleted(events, r, reason, endedAt);
  }

  private end(scope: SessionScope, reason: ApiSessionDeleteReason): Promise<ApiSessionRecord[]> {
    return this.sessions.endByIdentity(scope.identityId, reason, scope.authenticatorId);
  }

  /** Drops announced tombstones; if that fails the sweeper announces them once more (a duplicate). */
  private async forget(ended: ApiSessionRecord[]): Promise<void> {
    if (ended.length > 0) await this.sessions.forget(ended.map((r) => r.id)).catch(() => undefined);
  }
}
