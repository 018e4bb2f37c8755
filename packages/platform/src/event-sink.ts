/**
 * The domain's port for emitting events inside the caller's transaction. Pure (no I/O), so domain
 * code imports it from here (`@ziti/platform/event-sink`); the outbox (`db/outbox.ts`) implements it.
 */
export interface EventSink {
  emit(type: string, data: unknown, version?: number): Promise<void>;
}
