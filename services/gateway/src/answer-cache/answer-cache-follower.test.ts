import { maintenanceCallContracts, queueGroup, subjects } from '@ziti/contracts';
import { InProcessBus, createLogger } from '@ziti/platform';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/infra.ts';
import { AnswerCacheFollower } from './answer-cache-follower.transport.ts';

/**
 * The follower serves from its caches only once every owner of their events said where its
 * positions stand (docs/adr/0015): not while one does not answer, and by itself once they all do.
 */
const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

describe('the answer cache follower', () => {
  it('keeps nothing until every owner answers its position, then starts by itself at those positions', async () => {
    const bus = new InProcessBus();
    const follower = new AnswerCacheFollower(bus, createLogger('gateway', 'silent'), {
      identities: 10,
      serviceChars: 1_000_000,
    });
    stops.push(
      () => follower.stop(),
      () => bus.close(),
    );
    await follower.start();
    const { identity, services } = follower.caches;
    expect([identity.following, services.following]).toEqual([false, false]);
    expect(identity.fill('i1', 'A', { auth: 1, 'pki-enrollment': 1 }, identity.ticket())).toBe(false);

    const positions = { auth: 7, 'pki-enrollment': 3, policy: 11, inventory: 5 };
    for (const [owner, position] of Object.entries(positions))
      bus.serve(
        subjects.call(owner as keyof typeof positions, maintenanceCallContracts.eventPosition.action),
        queueGroup(owner as keyof typeof positions),
        async () => ({ position }),
      );
    // The follower asks again every 2 s.
    await waitFor(() => identity.following && services.following, 'both caches to follow', 6_000);
    // An answer reflecting less than where an owner stood when the gateway followed may miss an event.
    expect(identity.fill('i1', 'old', { auth: 7, 'pki-enrollment': 2 }, identity.ticket())).toBe(false);
    expect(identity.fill('i1', 'A', { auth: 7, 'pki-enrollment': 3 }, identity.ticket())).toBe(true);
    expect(services.fill('i1', 'S', { policy: 10, inventory: 5, auth: 7 }, services.ticket(), 'k')).toBe(false);
    expect(services.fill('i1', 'S', { policy: 11, inventory: 5, auth: 7 }, services.ticket(), 'k')).toBe(true);
  });

  it('with no room for answers follows nothing', async () => {
    const bus = new InProcessBus();
    const follower = new AnswerCacheFollower(bus, createLogger('gateway', 'silent'), {
      identities: 0,
      serviceChars: 0,
    });
    stops.push(
      () => follower.stop(),
      () => bus.close(),
    );
    await follower.start();
    expect(follower.caches.identity.following).toBe(false);
  });
});
