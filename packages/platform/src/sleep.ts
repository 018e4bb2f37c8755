/**
 * Waits `ms`, or less: it resolves as soon as `signal` aborts, and at once when it has aborted
 * already (it never rejects), so a loop that checks the signal after it stops without waiting out
 * its pause.
 */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
