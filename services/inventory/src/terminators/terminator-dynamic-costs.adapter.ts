import { fabricCallContracts } from '@ziti/contracts';
import { type Bus, type Logger, callService } from '@ziti/platform';
import type { TerminatorDynamicCosts } from './terminators.ports.ts';

/** A terminator read waits this long for fabric at most, then shows 0. */
const budgetMs = 1_000;
/** Sent again after this long unanswered (a frozen replica), within the budget. */
const repeatAfterMs = 400;
const maxIds = 1_000;

/**
 * The router edge's dynamic terminator costs, asked of fabric (`fabric.terminatorDynamicCosts`,
 * one call per page or detail). fabric not answering within the budget (none deployed, down, slow)
 * is 0 for every terminator — a fabric that is down holds no dynamic costs — with one warning per
 * outage, never a failed read.
 */
export class FabricTerminatorDynamicCosts implements TerminatorDynamicCosts {
  private unanswered = false;

  constructor(
    private readonly bus: Bus,
    private readonly logger: Pick<Logger, 'warn' | 'info'>,
  ) {}

  async of(ids: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>(ids.map((id) => [id, 0]));
    const unique = [...out.keys()];
    try {
      for (let i = 0; i < unique.length; i += maxIds) {
        const { costs } = await callService(
          this.bus,
          'fabric',
          fabricCallContracts.terminatorDynamicCosts,
          { ids: unique.slice(i, i + maxIds) },
          { timeoutMs: budgetMs, repeatAfterMs },
        );
        for (const [id, cost] of Object.entries(costs)) if (out.has(id)) out.set(id, cost);
      }
    } catch (err) {
      if (!this.unanswered) {
        this.unanswered = true;
        this.logger.warn({ err }, 'fabric does not answer terminator dynamic costs: they show as 0 until it does');
      }
      return new Map(unique.map((id) => [id, 0]));
    }
    if (this.unanswered) {
      this.unanswered = false;
      this.logger.info('fabric answers terminator dynamic costs again');
    }
    return out;
  }
}
