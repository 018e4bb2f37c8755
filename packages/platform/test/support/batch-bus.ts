import { eventTypes, maintenanceActions } from '@ziti/contracts';
import type { Bus, Consumer, EventConsumerOptions, EventDelivery, EventEnvelope } from '../../src/index.ts';

/**
 * A bus that hands a consumer's batch handler to the test, so a test delivers batches in the
 * order it wants (redeliveries, gaps, races) to a consumer on a real database. For a resync the
 * owner answers its event position (`ownerPosition`) and has no entity states; any other request
 * is a test bug.
 * Delivery over NATS itself is tested in event-flow.int.test.ts.
 */
export class BatchBus implements Bus {
  handler?: EventConsumerOptions['handler'];
  ownerPosition = 0;
  async request(subject: string): Promise<unknown> {
    if (subject.endsWith(maintenanceActions.eventPosition)) return { position: this.ownerPosition };
    if (subject.endsWith(maintenanceActions.entityStates)) return { states: [], position: this.ownerPosition };
    throw new Error(`unexpected request ${subject}`);
  }
  serve() {
    return { drain: async () => undefined };
  }
  async publish(): Promise<void> {}
  async consume(o: EventConsumerOptions): Promise<Consumer> {
    this.handler = o.handler;
    return { fresh: false, stop: async () => undefined };
  }
  async close(): Promise<void> {}
}

/** auth's `identity.deleted` at `position` (of identity `identity-<position>`), as the bus delivers it. */
export const identityDeletedDelivery = (position: number, attempt = 1): EventDelivery => ({
  attempt,
  event: {
    id: `auth:${position}`,
    type: eventTypes.identityDeleted.type,
    version: eventTypes.identityDeleted.version,
    source: 'auth',
    sequence: position,
    occurredAt: new Date().toISOString(),
    data: { id: `identity-${position}` },
  } as EventEnvelope,
});
