import type { EventDefinition, EventState } from '@ziti/contracts';

/**
 * The domain's port for emitting events inside the caller's transaction. Pure (no I/O), so domain
 * code imports it from here (`@ziti/platform/event-sink`); the outbox (`db/outbox.ts`) implements it.
 * An event is emitted through its definition (`emit(eventTypes.identityUpdated, state)`): its type
 * and version come from the contract, and the compiler checks the state against its schema.
 */
export interface EventSink {
  emit<D extends EventDefinition>(def: D, state: EventState<D>): Promise<void>;
}
