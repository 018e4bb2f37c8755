import { eventTypes } from '@ziti/contracts';
import { announcedWithItsEnd, emitApiSessionDeleted, emitApiSessionExpired } from './api-session-events.domain.ts';
import { identityState } from '../identities/identities.domain.ts';
import type { SessionStore, UnitOfWork } from '../shared/stores.ports.ts';

export interface SweeperOptions {
  /** Between sweeps (the reference sweeps expired sessions every 5 s, ZITI-FACTS §1.3). */
  intervalMs?: number;
  /** Entries handled per transaction. */
  batch?: number;
  /** How long a claimed session stays with this replica before another may claim it again. */
  leaseMs?: number;
  now?: () => Date;
  onError?: (err: unknown) => void;
}

export interface SweepResult {
  /** `apiSession.expired` published. */
  expired: number;
  /** `apiSession.deleted` published for tombstones nobody announced (a crash, a rollback). */
  deleted: number;
  /** Timed disables recorded as ended (`identity.updated`). */
  enabled: number;
}

/**
 * Turns what time does into events, every 5 s, on every auth replica at once:
 * - API sessions whose sliding expiry passed become `apiSession.expired`, and tombstones whose
 *   ending operation never announced them become `apiSession.deleted` (api-session-events.domain.ts).
 *   Replicas share the work through the store's leased claims: each entry goes to one replica;
 *   one that dies before `forget` loses the lease and the entry is claimed again (a duplicate
 *   event now and then, never a lost one).
 * - Timed disables whose `disabledUntil` passed are recorded (`disabled` = false) and published
 *   as `identity.updated` in the same transaction; replicas skip the rows another one holds.
 */
export class ApiSessionSweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private readonly intervalMs: number;
  private readonly batch: number;
  private readonly leaseMs: number;
  private readonly now: () => Date;

  constructor(
    private readonly work: UnitOfWork,
    private readonly sessions: SessionStore,
    private readonly options: SweeperOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 5_000;
    this.batch = options.batch ?? 200;
    this.leaseMs = options.leaseMs ?? 60_000;
    this.now = options.now ?? (() => new Date());
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
    this.tick();
  }

  /** Stops the loop and waits for a sweep in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private tick(): void {
    if (this.running) return;
    this.running = this.sweep()
      .catch((err) => this.options.onError?.(err))
      .finally(() => {
        this.running = undefined;
      });
  }

  /** One full sweep: everything due now. */
  async sweep(): Promise<SweepResult> {
    const result: SweepResult = { expired: 0, deleted: 0, enabled: 0 };
    for (;;) {
      const n = await this.sweepSessions(result);
      if (n < this.batch) break;
    }
    for (;;) {
      const n = await this.sweepDisables(result);
      if (n < this.batch) break;
    }
    return result;
  }

  private async sweepSessions(result: SweepResult): Promise<number> {
    const claimed = await this.sessions.claimEnded(this.batch, this.leaseMs);
    if (claimed.length === 0) return 0;
    await this.work(async (s) => {
      for (const { record, reason, endedAt } of claimed) {
        if (reason === null) {
          await emitApiSessionExpired(s.events, record, endedAt);
          result.expired++;
        } else if (!(await announcedWithItsEnd(s, record, reason))) {
          await emitApiSessionDeleted(s.events, record, reason, endedAt);
          result.deleted++;
        }
      }
    });
    await this.sessions.forget(claimed.map((c) => c.record.id));
    return claimed.length;
  }

  private async sweepDisables(result: SweepResult): Promise<number> {
    return this.work(async (s) => {
      const lapsed = await s.identities.endLapsedDisables(this.now(), this.batch);
      for (const identity of lapsed) {
        await s.events.emit(eventTypes.identityUpdated, identityState(identity));
      }
      result.enabled += lapsed.length;
      return lapsed.length;
    });
  }
}
