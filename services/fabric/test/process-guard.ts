/**
 * Catches what would escape to the process while a test runs: uncaught exceptions and unhandled
 * rejections are collected instead (the runner's own listeners are set aside meanwhile and put
 * back by `restore`), so a test can assert that nothing a peer sends throws out of the code.
 */
export interface ProcessGuard {
  readonly errors: unknown[];
  restore(): void;
}

type Event = 'uncaughtException' | 'unhandledRejection';
const events: Event[] = ['uncaughtException', 'unhandledRejection'];

export function guardProcess(): ProcessGuard {
  const errors: unknown[] = [];
  const saved = new Map<Event, ((...args: unknown[]) => void)[]>();
  const collect = (err: unknown) => {
    errors.push(err);
  };
  for (const event of events) {
    saved.set(event, process.listeners(event as 'uncaughtException') as never);
    process.removeAllListeners(event);
    process.on(event, collect);
  }
  let restored = false;
  return {
    errors,
    restore() {
      if (restored) return;
      restored = true;
      for (const event of events) {
        process.off(event, collect);
        for (const listener of saved.get(event)!) process.on(event, listener as never);
      }
    },
  };
}
