import type { Positions } from '../causality.ts';
import type { Database, Db } from '../db/database.ts';
import { queryRows } from '../db/database.ts';
import type { Logger } from '../logger.ts';

/** NOTIFY channel on which a consumer announces a new watermark (`<consumer>|<source>|<position>`). */
export const cursorChannel = 'ziti_cursor';

interface Waiter {
  source: string;
  position: number;
  resolve: () => void;
}

/**
 * How far this service has applied each source's events, shared by its replicas: every replica
 * learns a new watermark from the NOTIFY its writer sends at commit (and from the database when a
 * wait runs out). A read that must see the caller's own writes waits here, bounded (docs/adr/0008).
 */
export class ConsumerProgress {
  private readonly watermarks = new Map<string, number>();
  private readonly waiters = new Set<Waiter>();
  private unlisten?: () => Promise<void>;
  /** Waits that ran out (the read answered with what it had). */
  timeouts = 0;

  constructor(
    private readonly database: Database,
    /** source → durable name of this service's consumer of it. */
    private readonly consumers: Map<string, string>,
    private readonly logger: Logger,
    private readonly maxWaitMs = 5_000,
  ) {}

  async start(): Promise<void> {
    this.unlisten = await this.database
      .listen(cursorChannel, (payload) => {
        const [consumer, source, position] = payload.split('|');
        if (source && this.consumers.get(source) === consumer) this.advance(source, Number(position));
      })
      .catch((err) => {
        this.logger.warn({ err }, 'cursor notifications unavailable; waits poll the database');
        return undefined;
      });
    await this.refresh();
  }

  async stop(): Promise<void> {
    await this.unlisten?.().catch(() => undefined);
    for (const w of this.waiters) w.resolve();
    this.waiters.clear();
  }

  /** Reads every watermark from the database. */
  async refresh(): Promise<void> {
    const rows = await queryRows<{ consumer: string; source: string; watermark: string | number }>(
      this.database.db,
      'select consumer, source, watermark from event_cursors where consumer = any($1::text[])',
      [[...this.consumers.values()]],
    );
    for (const r of rows) if (this.consumers.get(r.source) === r.consumer) this.advance(r.source, Number(r.watermark));
  }

  watermark(source: string): number {
    return this.watermarks.get(source) ?? 0;
  }

  advance(source: string, position: number): void {
    if (!Number.isFinite(position) || position <= this.watermark(source)) return;
    this.watermarks.set(source, position);
    for (const w of this.waiters) {
      if (w.source === source && w.position <= position) {
        this.waiters.delete(w);
        w.resolve();
      }
    }
  }

  /** The sources of `after` this service consumes and has not applied that far yet. */
  private behind(after: Positions): [string, number][] {
    return Object.entries(after).filter(([s, p]) => this.consumers.has(s) && p > this.watermark(s));
  }

  /**
   * Resolves once every source of `after` that this service consumes is applied up to its
   * position, or after `maxWaitMs` (then true only if a last look at the database says so).
   */
  async waitFor(after: Positions | undefined): Promise<boolean> {
    if (!after) return true;
    let behind = this.behind(after);
    if (behind.length === 0) return true;
    const waits: Promise<void>[] = [];
    const mine: Waiter[] = [];
    for (const [source, position] of behind) {
      waits.push(
        new Promise<void>((resolve) => {
          const w = { source, position, resolve };
          mine.push(w);
          this.waiters.add(w);
        }),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    // A missed NOTIFY (reconnect) must not cost the whole wait: look at the database now and then.
    const poll = setInterval(() => void this.refresh().catch(() => undefined), 250);
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), this.maxWaitMs);
    });
    try {
      await Promise.race([Promise.all(waits), expired]);
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
      for (const w of mine) this.waiters.delete(w);
    }
    behind = this.behind(after);
    if (behind.length > 0) await this.refresh().catch(() => undefined);
    behind = this.behind(after);
    if (behind.length === 0) return true;
    this.timeouts++;
    this.logger.warn(
      { behind: Object.fromEntries(behind.map(([s, p]) => [s, { wanted: p, applied: this.watermark(s) }])) },
      "read answered before the caller's own writes were applied here",
    );
    return false;
  }
}

/**
 * The positions a read made after this call reflects at least (docs/adr/0015): this service's own
 * event position (`owner`) and, for each source it consumes, the watermark its consumer has
 * applied (the lowest if several consumers follow one source). Read before the state, in one
 * statement. A source whose consumer has no cursor yet is absent.
 */
export async function positionsReflected(
  db: Db,
  owner: string,
  consumed: readonly string[],
): Promise<Record<string, number>> {
  const [row] = await queryRows<{ own: string | number | null; consumed: unknown }>(
    db,
    `select (select last from event_position where id = 1) as own,
            (select coalesce(jsonb_object_agg(source, w), '{}'::jsonb)
               from (select source, min(watermark) as w from event_cursors
                      where source = any($1::text[]) group by source) c) as consumed`,
    [[...consumed]],
    { prepare: true },
  );
  const out: Record<string, number> = {};
  if (row?.own !== null && row?.own !== undefined) out[owner] = Number(row.own);
  const byConsumer = (typeof row?.consumed === 'string' ? JSON.parse(row.consumed) : row?.consumed) as
    Record<string, string | number> | undefined;
  for (const [source, w] of Object.entries(byConsumer ?? {})) out[source] = Number(w);
  return out;
}
