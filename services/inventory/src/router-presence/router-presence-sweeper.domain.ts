import type { UnitOfWork } from '../shared/stores.ports.ts';
import { emitRouterPresence } from './router-presence.domain.ts';

export interface RouterPresenceSweeperOptions {
  /** Between sweeps (default 2 s). */
  intervalMs?: number;
  /** Presences turned offline per transaction (default 500). */
  batch?: number;
  onError?: (err: unknown) => void;
}

/**
 * Turns the presences whose lease lapsed offline (`SYNC_DISCONNECTED`) and announces each
 * (`routerPresence.changed`) in the same transaction: what marks the routers of a fabric replica
 * that died offline. Every inventory replica sweeps; each lapse goes to the one whose statement
 * locks it first, so it is announced once.
 */
export class RouterPresenceSweeper {
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private readonly intervalMs: number;
  private readonly batch: number;

  constructor(
    private readonly work: UnitOfWork,
    private readonly options: RouterPresenceSweeperOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 2_000;
    this.batch = options.batch ?? 500;
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

  /** One sweep: every presence lapsed now; answers how many this sweep turned offline. */
  async sweep(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.work(async (s) => {
        const lapsed = await s.routerPresence.lapse(this.batch);
        for (const p of lapsed) await emitRouterPresence(s, p);
        return lapsed.length;
      });
      total += n;
      if (n < this.batch) return total;
    }
  }
}
