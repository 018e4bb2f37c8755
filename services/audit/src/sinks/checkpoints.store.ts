import { type Database, type DatabaseSession, queryRows } from '@ziti/platform';
import { sleep } from '@ziti/platform/sleep';
import type { SinkCheckpoint, SinkLease } from './sinks.ports.ts';

/** The first key of the sinks' advisory locks (the second is the sink's name hashed). */
const leaseLockClass = 7_355_610;

/** How often a batch asks again for a lease another replica holds. */
const leasePollMs = 25;

/**
 * A sink's checkpoint in audit's database (`sink_checkpoints`, one row per sink), shared by every
 * audit replica: read afresh before each batch (no cache), saved as the greater of the stored and the
 * given position, so a replica that is behind never moves it back.
 *
 * On Postgres it also has a lease (SinkCheckpoint.lease): a session advisory lock per sink on a
 * connection of its own, held by the replica that runs the sink until it stops. A replica that dies,
 * or whose connection breaks, loses it with the connection (`held()` asks the connection). Under
 * `npm start` (PGlite) only one process opens the database: no lease.
 */
export class PgSinkCheckpoint implements SinkCheckpoint {
  readonly shared = true;
  readonly lease?: (waitMs: number, signal: AbortSignal) => Promise<SinkLease | undefined>;
  private session?: DatabaseSession;
  /** A lease of this object is out: advisory locks are re-entrant in a session, so it is refused here. */
  private leased = false;
  private closed = false;

  constructor(
    private readonly database: Database,
    /** The sink's name: its durable's (`audit-sink-webhook`). */
    readonly name: string,
  ) {
    if (database.kind === 'postgres') this.lease = (waitMs, signal) => this.takeLease(waitMs, signal);
  }

  async load(): Promise<number | undefined> {
    const [row] = await queryRows<{ position: string | number }>(
      this.database.db,
      'select position from sink_checkpoints where name = $1',
      [this.name],
    );
    return row === undefined ? undefined : Number(row.position);
  }

  async save(position: number): Promise<void> {
    if (!Number.isSafeInteger(position) || position < 0) throw new Error(`not a feed position: ${position}`);
    await queryRows(
      this.database.db,
      `insert into sink_checkpoints (name, position) values ($1, $2)
       on conflict (name) do update set position = greatest(sink_checkpoints.position, excluded.position),
              updated_at = now()
        where sink_checkpoints.position < excluded.position`,
      [this.name, position],
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    this.drop(this.session);
  }

  private async takeLease(waitMs: number, signal: AbortSignal): Promise<SinkLease | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (this.closed || signal.aborted) return undefined;
      if (!this.leased) {
        const session = (this.session ??= await this.database.session());
        let locked: boolean;
        try {
          const [row] = await session.query<{ locked: boolean }>(
            'select pg_try_advisory_lock($1::int, hashtext($2)) as locked',
            [leaseLockClass, this.name],
          );
          locked = row?.locked === true;
        } catch (err) {
          this.drop(session);
          throw err;
        }
        if (locked) return this.leaseOn(session);
      }
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await sleep(Math.min(leasePollMs, left), signal);
    }
  }

  private leaseOn(session: DatabaseSession): SinkLease {
    this.leased = true;
    let released = false;
    return {
      // The lock lives as long as the session: a connection that answers still holds it.
      held: async () => {
        if (released) return false;
        try {
          await session.query('select 1');
          return true;
        } catch {
          this.drop(session);
          return false;
        }
      },
      release: async () => {
        if (released) return;
        released = true;
        try {
          await session.query('select pg_advisory_unlock($1::int, hashtext($2))', [leaseLockClass, this.name]);
        } catch {
          this.drop(session);
        } finally {
          this.leased = false;
          if (this.closed) this.drop(session);
        }
      },
    };
  }

  /** Closes a session (its locks go with it); the next lease opens another. */
  private drop(session: DatabaseSession | undefined): void {
    if (!session) return;
    if (this.session === session) this.session = undefined;
    session.release(true);
  }
}
