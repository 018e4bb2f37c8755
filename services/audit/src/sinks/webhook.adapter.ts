import { parseRetryAfter, signWebhook, statusFailure, webhookHeaders } from './sinks.domain.ts';
import type { DeliveryOutcome, SinkFailure, SinkItem, SinkOutput } from './sinks.ports.ts';

export interface WebhookOutputOptions {
  url: string;
  secret: string;
  /** Longest one POST may take, its answer included. */
  timeoutMs: number;
  now?: () => number;
}

/**
 * POSTs each event on its own, in order, as `application/json`, signed (`X-Ziti-Signature`, over
 * the event id, the timestamp and the body; see signWebhook). Redirects are not followed (a 3xx is
 * a failure: the URL should be fixed, and a redirect must not carry the feed elsewhere).
 */
export class WebhookOutput implements SinkOutput {
  private readonly now: () => number;

  constructor(private readonly options: WebhookOutputOptions) {
    this.now = options.now ?? Date.now;
  }

  async deliver(items: readonly SinkItem[], signal: AbortSignal): Promise<DeliveryOutcome> {
    for (let i = 0; i < items.length; i++) {
      const failure = await this.post(items[i]!, signal);
      if (failure) return { delivered: i, failure };
    }
    return { delivered: items.length };
  }

  private async post(item: SinkItem, stop: AbortSignal): Promise<SinkFailure | undefined> {
    const timestamp = Math.floor(this.now() / 1000).toString();
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    let response: Response;
    try {
      response = await fetch(this.options.url, {
        method: 'POST',
        body: item.body,
        redirect: 'manual',
        signal: AbortSignal.any([stop, timeout]),
        headers: {
          'content-type': 'application/json',
          'user-agent': 'ziti-edge-controller-event-sink',
          [webhookHeaders.eventId]: item.id,
          [webhookHeaders.timestamp]: timestamp,
          [webhookHeaders.signature]: signWebhook(this.options.secret, item.id, timestamp, item.body),
        },
      });
      // The answer's body is not read: dropping it frees the connection for the next event.
      await response.body?.cancel().catch(() => undefined);
    } catch (err) {
      if (timeout.aborted && !stop.aborted)
        return { reason: 'timeout', message: `no answer within ${this.options.timeoutMs} ms` };
      return { reason: 'network', message: networkCode(err) };
    }
    return statusFailure(response.status, parseRetryAfter(response.headers.get('retry-after'), this.now()));
  }
}

/** The system error code behind a failed fetch (ECONNREFUSED, ENOTFOUND, …): never the URL. */
function networkCode(err: unknown): string {
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return (err as Error)?.name ?? 'error';
}
