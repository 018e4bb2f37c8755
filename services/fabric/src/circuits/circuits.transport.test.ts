import { fabricCallContracts } from '@ziti/contracts';
import { InProcessBus, callService, serveCalls } from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import type { Circuits } from './circuits.domain.ts';
import { circuitCalls } from './circuits.transport.ts';
import { DynamicCosts } from './terminator-selection.domain.ts';

/** `fabric.terminatorDynamicCosts`: what this replica's DynamicCosts holds, as inventory asks for it. */
describe('fabric.terminatorDynamicCosts', () => {
  let bus: InProcessBus | undefined;
  afterEach(async () => {
    await bus?.close();
    bus = undefined;
  });

  function serving(costs: DynamicCosts) {
    bus = new InProcessBus();
    serveCalls(bus, 'fabric', circuitCalls({} as Circuits, costs));
    const b = bus;
    return (ids: string[]) => callService(b, 'fabric', fabricCallContracts.terminatorDynamicCosts, { ids });
  }

  it('answers each id asked with the cost DynamicCosts holds: a circuit 2, a failure 20, untouched 0', async () => {
    const costs = new DynamicCosts();
    costs.dialSucceeded('t-open');
    costs.dialFailed('t-failed');
    costs.dialSucceeded('t-closed');
    costs.circuitRemoved('t-closed');
    const ask = serving(costs);
    expect(await ask(['t-open', 't-failed', 't-closed', 't-untouched'])).toEqual({
      costs: { 't-open': 2, 't-failed': 20, 't-closed': 0, 't-untouched': 0 },
    });
    costs.dialSucceeded('t-failed');
    costs.creditOverTime();
    // 20 − 2 (the success's credit) + 2 (its circuit) − 5 (a minute's credit).
    expect(await ask(['t-failed'])).toEqual({ costs: { 't-failed': 15 } });
    expect(await ask([])).toEqual({ costs: {} });
  });

  it('refuses more than 1,000 ids (COULD_NOT_VALIDATE)', async () => {
    const ask = serving(new DynamicCosts());
    const ids = Array.from({ length: 1_001 }, (_, i) => `t-${i}`);
    await expect(ask(ids)).rejects.toMatchObject({ code: 'COULD_NOT_VALIDATE' });
    expect(Object.keys((await ask(ids.slice(0, 1_000))).costs)).toHaveLength(1_000);
  });
});
