import type { Bus, Consumer, Logger } from '@ziti/platform';
import { sleep } from '@ziti/platform/sleep';
import { FileCheckpoint } from './checkpoint-file.adapter.ts';
import { JsonlFileCheckpoint, JsonlFileOutput } from './jsonl-file.adapter.ts';
import { OrderedSink, SeededCheckpoint } from './sink-delivery.domain.ts';
import { sinkObserver, watchSinkPending } from './sink-observer.adapter.ts';
import { type SinkConfig, type SinkName, frameEvent, redactUrl, sinkDurables, sinkSubject } from './sinks.domain.ts';
import type { SinkCheckpoint, SinkLease, SinkOutput } from './sinks.ports.ts';
import { WebhookOutput } from './webhook.adapter.ts';

export interface EventSinks {
  /** Stops delivering: an attempt in progress is abandoned and its events go back to the bus. */
  stop(): Promise<void>;
}

export interface StartEventSinksOptions {
  bus: Bus;
  logger: Logger;
  /** From readSinkConfig: no sink configured, nothing started. */
  config: SinkConfig;
  /**
   * Checkpoints to use instead of the files of the configuration: audit's app.ts gives the webhook
   * the shared one in its database (checkpoints.store.ts), so it can be configured on several
   * replicas (see SinkCheckpoint.lease); the webhook's file is then read only while that one has no
   * position yet. Closed when the sinks stop.
   */
  checkpoints?: Partial<Record<SinkName, SinkCheckpoint>>;
}

/**
 * Starts the configured event sinks (docs/extensions.md, "Event sinks"): each follows audit's
 * events on its own durable consumer (`audit-sink-file`, `audit-sink-webhook`), shared by the
 * audit replicas, and delivers them in order through an OrderedSink. A sink whose checkpoint has a
 * lease runs on the replica that holds it, the others standing by (LeasedSink).
 */
export async function startEventSinks({
  bus,
  logger,
  config,
  checkpoints = {},
}: StartEventSinksOptions): Promise<EventSinks> {
  const running: { stop(): Promise<void> }[] = [];
  // A batch's last attempt must end within the 35 s the NATS bus holds a batch for. The in-process
  // bus (`npm start`) gives each durable its own queue and redelivery, so the same tuning serves.
  const tuningFor = (attemptMs: number) => ({
    batchBudgetMs: Math.max(1_000, 30_000 - attemptMs),
    ...config.tuning,
  });

  const start = async (
    name: SinkName,
    target: string,
    output: SinkOutput,
    checkpoint: SinkCheckpoint,
    auth: boolean,
    /** Longest one delivery attempt may take. */
    attemptMs: number,
  ) => {
    const durable = sinkDurables[name];
    const makeSink = (leased?: () => Promise<boolean>) =>
      new OrderedSink({
        output,
        checkpoint,
        observer: sinkObserver(durable, target, logger),
        frame: (event) => frameEvent(event, { includeAuthentication: auth }),
        backoff: config.backoff,
        ...tuningFor(attemptMs),
        ...(leased ? { leased } : {}),
      });
    const consume = (sink: OrderedSink) => bus.consume({ durable, subject: sinkSubject, handler: sink.handle });
    if (checkpoint.lease) {
      const leased = new LeasedSink({ durable, target, checkpoint, logger, makeSink, consume });
      running.push(leased);
      await leased.start();
      return;
    }
    const sink = makeSink();
    await sink.start();
    const consumer = await consume(sink);
    const unwatch = consumer.pending ? watchSinkPending(durable, () => consumer.pending!()) : () => undefined;
    running.push({
      stop: async () => {
        await sink.stop();
        await consumer.stop();
        await checkpoint.close?.().catch(() => undefined);
        unwatch();
      },
    });
  };

  const stop = async () => {
    const all = running.splice(0);
    await Promise.all(all.map((r) => r.stop()));
  };

  try {
    if (config.file) {
      const file = config.file;
      const output = new JsonlFileOutput(file.path);
      const saved = checkpoints.file ?? new FileCheckpoint(file.checkpointPath);
      const checkpoint = new JsonlFileCheckpoint(output, saved, (tail) => {
        if (tail.repaired)
          logger.warn({ sink: sinkDurables.file, target: file.path }, 'cut off a torn last line of the events file');
        if (tail.unreadable)
          logger.warn(
            { sink: sinkDurables.file, target: file.path },
            'the last line of the events file has no feedId; going by the checkpoint',
          );
      });
      await start('file', file.path, output, checkpoint, file.includeAuthentication, 10_000);
    }
    if (config.webhook) {
      const webhook = config.webhook;
      const output = new WebhookOutput({ url: webhook.url, secret: webhook.secret, timeoutMs: webhook.timeoutMs });
      await start(
        'webhook',
        redactUrl(webhook.url),
        output,
        checkpoints.webhook
          ? new SeededCheckpoint(checkpoints.webhook, new FileCheckpoint(webhook.checkpointPath))
          : new FileCheckpoint(webhook.checkpointPath),
        webhook.includeAuthentication,
        webhook.timeoutMs,
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}

/** How often a replica standing by asks for a sink's lease, and the one delivering checks it still has it. */
const standbyMs = 1_000;

interface LeasedSinkOptions {
  durable: string;
  /** Where it delivers, as it may be logged. */
  target: string;
  /** Has a lease. */
  checkpoint: SinkCheckpoint;
  logger: Logger;
  makeSink(leased: () => Promise<boolean>): OrderedSink;
  consume(sink: OrderedSink): Promise<Consumer>;
}

/**
 * A sink that runs on one replica at a time: the one holding its checkpoint's lease consumes its
 * durable and delivers (each event only while it still holds the lease); the others stand by and
 * ask for the lease every second. A replica whose lease is lost (its database connection broke)
 * stops its consumer, handing back what it held, and stands by; one that stops lets go of it, and
 * another replica takes over within a second, from the shared position.
 */
class LeasedSink {
  private readonly abort = new AbortController();
  private term?: { lease: SinkLease; sink: OrderedSink; consumer?: Consumer };
  private loop?: Promise<void>;
  private standingBy = false;
  private readonly unwatch: () => void;

  constructor(private readonly o: LeasedSinkOptions) {
    this.unwatch = watchSinkPending(o.durable, async () => (await this.term?.consumer?.pending?.()) ?? 0);
  }

  /** Takes the lease if it is free (a failure to start is the caller's), then keeps watching. */
  async start(): Promise<void> {
    try {
      await this.takeOver();
    } catch (err) {
      await this.endTerm();
      throw err;
    }
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
    await this.endTerm();
    await this.o.checkpoint.close?.().catch(() => undefined);
    this.unwatch();
  }

  private async run(): Promise<void> {
    const { signal } = this.abort;
    let failures = 0;
    while (!signal.aborted) {
      await sleep(failures === 0 ? standbyMs : Math.min(30_000, standbyMs * 2 ** Math.min(failures, 5)), signal);
      if (signal.aborted) break;
      try {
        if (!this.term) await this.takeOver();
        else if (!(await this.term.lease.held())) {
          this.o.logger.warn(
            { sink: this.o.durable, target: this.o.target },
            'event sink lost its lease (database connection); another replica may deliver now',
          );
          await this.endTerm();
        }
        failures = 0;
      } catch (err) {
        failures++;
        this.o.logger.warn({ err, sink: this.o.durable, failures }, 'event sink lease not taken or kept; retrying');
        await this.endTerm();
      }
    }
  }

  private async takeOver(): Promise<void> {
    const lease = await this.o.checkpoint.lease!(0, this.abort.signal);
    if (!lease) {
      if (!this.standingBy)
        this.o.logger.info(
          { sink: this.o.durable, target: this.o.target },
          'event sink stands by: another replica delivers',
        );
      this.standingBy = true;
      return;
    }
    this.standingBy = false;
    const sink = this.o.makeSink(() => lease.held());
    this.term = { lease, sink };
    await sink.start();
    this.term.consumer = await this.o.consume(sink);
  }

  private async endTerm(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    if (!term) return;
    await term.sink.stop();
    await term.consumer?.stop().catch(() => undefined);
    await term.lease.release().catch(() => undefined);
  }
}
