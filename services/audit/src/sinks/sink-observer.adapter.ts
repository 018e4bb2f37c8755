import { Counter, Gauge } from 'prom-client';
import type { Logger } from '@ziti/platform/logger';
import { metricsRegistry } from '@ziti/platform/metrics';
import type { SinkFailure, SinkObserver } from './sinks.ports.ts';

let made: ReturnType<typeof makeSeries> | undefined;
const pendingSources = new Map<string, () => Promise<number>>();

function makeSeries() {
  return {
    delivered: new Counter({
      name: 'ziti_event_sink_delivered_total',
      help: 'Events an event sink delivered (written and synced to its file, or answered 2xx by its webhook)',
      labelNames: ['sink'],
      registers: [metricsRegistry],
    }),
    failures: new Counter({
      name: 'ziti_event_sink_failures_total',
      help: 'Failed delivery attempts of an event sink, by reason (network, timeout, http_3xx, http_408, http_429, http_4xx, http_5xx, io); each is retried',
      labelNames: ['sink', 'reason'],
      registers: [metricsRegistry],
    }),
    failing: new Gauge({
      name: 'ziti_event_sink_failing',
      help: 'Whether the event sink is failing now (1: its last attempt failed and it is retrying with back-off)',
      labelNames: ['sink'],
      registers: [metricsRegistry],
    }),
    lastSuccess: new Gauge({
      name: 'ziti_event_sink_last_success_timestamp_seconds',
      help: 'When the event sink last delivered an event (Unix time)',
      labelNames: ['sink'],
      registers: [metricsRegistry],
    }),
    position: new Gauge({
      name: 'ziti_event_sink_position',
      help: "The audit position up to which the event sink has delivered (the feed id's number)",
      labelNames: ['sink'],
      registers: [metricsRegistry],
    }),
    skipped: new Counter({
      name: 'ziti_event_sink_skipped_events_total',
      help: 'Audit positions an event sink passed over: undecodable events, or positions that never arrived (gap)',
      labelNames: ['sink', 'reason'],
      registers: [metricsRegistry],
    }),
    pending: new Gauge({
      name: 'ziti_event_sink_pending_events',
      help: "Events on the stream not yet delivered to the event sink's durable consumer (on the in-process bus: queued for it)",
      labelNames: ['sink'],
      registers: [metricsRegistry],
      async collect() {
        this.reset();
        for (const [sink, read] of pendingSources) this.set({ sink }, await read().catch(() => 0));
      },
    }),
  };
}

const series = () => (made ??= makeSeries());

/** Reports the lag of a sink's durable until the returned function is called. */
export function watchSinkPending(sink: string, read: () => Promise<number>): () => void {
  series();
  pendingSources.set(sink, read);
  return () => {
    if (pendingSources.get(sink) === read) pendingSources.delete(sink);
  };
}

/**
 * A sink's metrics and log lines. `target` names where it delivers as it may be logged (the file's
 * path, the webhook URL without credentials or query); no line carries the secret or a payload.
 */
export function sinkObserver(sink: string, target: string, logger: Logger): SinkObserver {
  const s = series();
  s.failing.set({ sink }, 0);
  s.delivered.inc({ sink }, 0);
  return {
    started(position) {
      if (position !== undefined) s.position.set({ sink }, position);
      logger.info({ sink, target, position: position ?? null }, 'event sink started');
    },
    delivered(count, position) {
      s.delivered.inc({ sink }, count);
      s.position.set({ sink }, position);
      s.lastSuccess.set({ sink }, Date.now() / 1000);
    },
    failed(failure: SinkFailure, failures, retryInMs) {
      s.failures.inc({ sink, reason: failure.reason });
      s.failing.set({ sink }, 1);
      logger.warn(
        {
          sink,
          target,
          reason: failure.reason,
          ...(failure.status !== undefined ? { status: failure.status } : {}),
          detail: failure.message,
          failures,
          retryInMs,
        },
        'event sink delivery failed; retrying in order',
      );
    },
    recovered(failures, forMs) {
      s.failing.set({ sink }, 0);
      logger.info({ sink, target, failures, failingForMs: forMs }, 'event sink delivers again');
    },
    skipped(reason, from, to, detail) {
      s.skipped.inc({ sink, reason }, to - from + 1);
      if (reason === 'gap')
        logger.error(
          { sink, target, from, to },
          'audit positions never reached the event sink (expired from the stream, or its checkpoint was lost); passed over',
        );
      else logger.error({ sink, position: from, detail }, 'undecodable audit event; the event sink passed over it');
    },
    checkpointFailed(err) {
      logger.error({ sink, err }, 'event sink checkpoint not saved; the batch comes again');
    },
  };
}
