import { fabricCallContracts } from '@ziti/contracts';
import { InProcessBus, callHandlers, serveCalls } from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { FabricTerminatorDynamicCosts } from './terminator-dynamic-costs.adapter.ts';

/** inventory asks fabric for terminators' dynamic costs; a fabric that does not answer is 0, never a failed read. */
describe('FabricTerminatorDynamicCosts', () => {
  let bus: InProcessBus;
  afterEach(async () => {
    await bus?.close();
  });

  function logs() {
    const warnings: string[] = [];
    const infos: string[] = [];
    const logger = {
      warn: (_: unknown, message: string) => void warnings.push(message),
      info: (message: string) => void infos.push(message),
    } as never;
    return { logger, warnings, infos };
  }

  /** A fabric answering from `costs`, recording what it was asked; `hang` holds its answers until `release`. */
  function fabric(costs: Record<string, number>) {
    const asked: string[][] = [];
    const held: (() => void)[] = [];
    const state = { hang: false, release: () => held.splice(0).forEach((r) => r()) };
    serveCalls(
      bus,
      'fabric',
      callHandlers(
        { terminatorDynamicCosts: fabricCallContracts.terminatorDynamicCosts },
        {
          terminatorDynamicCosts: async ({ ids }) => {
            asked.push(ids);
            if (state.hang) await new Promise<void>((resolve) => held.push(resolve));
            return { costs: Object.fromEntries(ids.map((id) => [id, costs[id] ?? 0])) };
          },
        },
      ),
    );
    return { asked, state };
  }

  it('asks fabric once for the ids shown (each once) and answers its costs', async () => {
    bus = new InProcessBus();
    const { asked } = fabric({ t1: 2, t2: 20 });
    const { logger, warnings } = logs();
    const costs = await new FabricTerminatorDynamicCosts(bus, logger).of(['t1', 't2', 't3', 't1']);
    expect(Object.fromEntries(costs)).toEqual({ t1: 2, t2: 20, t3: 0 });
    expect(asked).toEqual([['t1', 't2', 't3']]);
    expect(warnings).toEqual([]);
  });

  it('no fabric, or one that does not answer within the budget, is 0 for every id, warned once per outage', async () => {
    bus = new InProcessBus();
    const { logger, warnings, infos } = logs();
    const costs = new FabricTerminatorDynamicCosts(bus, logger);
    // None deployed (no responders).
    expect(Object.fromEntries(await costs.of(['t1', 't2']))).toEqual({ t1: 0, t2: 0 });
    expect(Object.fromEntries(await costs.of(['t1']))).toEqual({ t1: 0 });
    expect(warnings).toHaveLength(1);
    // It comes: its costs, and the outage is over.
    const { state } = fabric({ t1: 4 });
    expect(Object.fromEntries(await costs.of(['t1', 't2']))).toEqual({ t1: 4, t2: 0 });
    expect(infos).toHaveLength(1);
    // It hangs: 0 after about a second, a new outage warned once.
    state.hang = true;
    const started = Date.now();
    expect(Object.fromEntries(await costs.of(['t1']))).toEqual({ t1: 0 });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(Object.fromEntries(await costs.of(['t1']))).toEqual({ t1: 0 });
    expect(warnings).toHaveLength(2);
    state.release();
  }, 10_000);

  it('asks in chunks of 1,000', async () => {
    bus = new InProcessBus();
    const { asked } = fabric({});
    const ids = Array.from({ length: 1_500 }, (_, i) => `t-${i}`);
    const costs = await new FabricTerminatorDynamicCosts(bus, logs().logger).of(ids);
    expect(costs.size).toBe(1_500);
    expect(asked.map((a) => a.length)).toEqual([1_000, 500]);
  });
});
