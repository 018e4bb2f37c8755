import { subjects } from '@ziti/contracts';
import { type Bus, type Logger, type Tail, answerCacheMetrics } from '@ziti/platform';
import { AnswerCache } from './answer-cache.domain.ts';
import { answerConcerns, answerSources } from './answer-concerns.domain.ts';

/** The cache and the tail of events that keeps it honest, started and stopped with the gateway. */
export class AnswerCacheFollower {
  readonly cache: AnswerCache;
  private tail?: Tail;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly maxEntries: number,
  ) {
    this.cache = new AnswerCache({ sources: [...answerSources], concerns: answerConcerns, maxEntries });
  }

  /** Follows the owners' events; without a bus that can (or with no room), the cache stays off. */
  async start(): Promise<void> {
    if (!this.bus.tail || this.maxEntries <= 0) return;
    this.tail = await this.bus.tail(
      answerSources.map((s) => subjects.event(s, '>')),
      (event) => {
        this.cache.apply(event);
        answerCacheMetrics.entries(this.cache.size);
      },
      () => {
        this.cache.reset();
        answerCacheMetrics.reset();
        answerCacheMetrics.entries(0);
        this.logger.warn('the answer cache restarted following events: every kept answer was dropped');
      },
    );
    this.cache.start();
  }

  async stop(): Promise<void> {
    await this.tail?.stop();
    this.tail = undefined;
  }
}
