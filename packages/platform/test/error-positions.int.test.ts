import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { InProcessBus, recordProduced, trackProduced } from '../src/index.ts';

/**
 * Regression (found in review): a handler that committed a write (its position recorded) and then failed answers an
 * error reply without the positions (reply.ts toBusReply), and the gateway drops what was produced
 * when dispatch throws (pipeline.ts: recordPositions only on success). The session's next request
 * does not wait for a write that did commit.
 */
describe('regression: positions of a write whose request then failed', () => {
  it('travel back with the error reply', async () => {
    const bus = new InProcessBus();
    bus.serve('ziti.rpc.inventory.call.x', 'q', async () => {
      recordProduced({ inventory: 7 }); // first unit of work committed
      throw new ApiError('NOT_FOUND'); // a later step fails
    });
    const { produced } = await trackProduced(() => bus.request('ziti.rpc.inventory.call.x', {}).catch(() => undefined));
    expect(produced).toEqual({ inventory: 7 });
  });
});
