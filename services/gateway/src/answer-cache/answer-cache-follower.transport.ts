import { type EntityOwner, subjects } from '@ziti/contracts';
import { type Bus, type Logger, type Tail, answerCacheMetrics, ownerEventPosition } from '@ziti/platform';
import { AnswerCache } from './answer-cache.domain.ts';
import {
  answerConcerns,
  answerSources,
  serviceAnswerConcerns,
  serviceAnswerSources,
} from './answer-concerns.domain.ts';

/** Both caches of kept answers (docs/adr/0015). */
export interface AnswerCaches {
  /** `/current-identity`, one answer per identity. */
  identity: AnswerCache;
  /** The client service reads, one answer per identity and URL. */
  services: AnswerCache;
}

/** How long to wait before asking the owners for their positions again when one did not answer. */
const retryMs = 2_000;

/**
 * The caches and the tail of events that keeps them honest, started and stopped with the gateway.
 * A cache serves once its owners' events are followed and the owners said where their positions
 * stood then (`maintenance.eventPosition`, asked after the tail began): an answer reflecting less
 * may miss an event published before this gateway followed, so it is not kept.
 */
export class AnswerCacheFollower {
  readonly caches: AnswerCaches;
  private tail?: Tail;
  private generation = 0;
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    limits: { identities: number; serviceChars: number },
  ) {
    this.caches = {
      identity: new AnswerCache({
        sources: [...answerSources],
        concerns: answerConcerns,
        maxEntries: limits.identities,
      }),
      services: new AnswerCache({
        sources: [...serviceAnswerSources],
        concerns: serviceAnswerConcerns,
        maxEntries: limits.identities,
        maxChars: limits.serviceChars,
      }),
    };
    this.enabled = limits.identities > 0;
    this.servicesEnabled = limits.serviceChars > 0;
  }

  private readonly enabled: boolean;
  private readonly servicesEnabled: boolean;

  private get followed(): [string, AnswerCache][] {
    if (!this.enabled) return [];
    return Object.entries(this.caches).filter(([name]) => name !== 'services' || this.servicesEnabled);
  }

  /** Follows the owners' events; without a bus that can (or with no room), the caches stay off. */
  async start(): Promise<void> {
    const followed = this.followed;
    if (!this.bus.tail || followed.length === 0) return;
    const sources = [...new Set(followed.flatMap(([, c]) => c.sources))];
    this.tail = await this.bus.tail(
      sources.map((s) => subjects.event(s as EntityOwner, '>')),
      (event) => {
        for (const [name, cache] of followed) {
          cache.apply(event);
          answerCacheMetrics.entries(name, cache.count, cache.characters);
        }
      },
      () => {
        for (const [name, cache] of followed) {
          cache.reset(true);
          answerCacheMetrics.entries(name, 0, 0);
        }
        answerCacheMetrics.reset();
        this.logger.warn('the answer cache restarted following events: every kept answer was dropped');
        void this.begin(sources, ++this.generation);
      },
    );
    await this.begin(sources, ++this.generation);
  }

  /** Asks the owners where their positions stand, then serves; again later while one does not answer. */
  private async begin(sources: string[], generation: number, attempt = 1): Promise<void> {
    clearTimeout(this.retry);
    try {
      const at = await Promise.all(sources.map((s) => ownerEventPosition(this.bus, s as EntityOwner)));
      if (generation !== this.generation) return;
      const positions = Object.fromEntries(sources.map((s, i) => [s, at[i]!]));
      for (const [, cache] of this.followed) cache.start(positions);
      if (attempt > 1) this.logger.info({ attempts: attempt }, 'the answer cache serves: every owner answered');
    } catch (err) {
      if (generation !== this.generation) return;
      // Said once, not every retry: an owner that is down is reported by its own health.
      // The reason, not the error: an owner not up yet is expected at start, and is no stack trace.
      if (attempt === 1)
        this.logger.info(
          `the answer cache waits for the owners of its events to answer: ${err instanceof Error ? err.message : String(err)}`,
        );
      this.retry = setTimeout(() => void this.begin(sources, generation, attempt + 1), retryMs);
      this.retry.unref();
    }
  }

  async stop(): Promise<void> {
    this.generation++;
    clearTimeout(this.retry);
    await this.tail?.stop();
    this.tail = undefined;
  }
}
