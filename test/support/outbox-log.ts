import { type Database, queryRows } from '@ziti/platform';

/**
 * Keeps a copy of every row written to `db`'s outbox in `outbox_log`, for tests that check what a
 * service wrote: the relay deletes an outbox row once it is published. Run after the service's
 * migrations (the outbox must exist); idempotent.
 */
export async function logOutbox(db: Database): Promise<void> {
  await db.withConnection((c) =>
    c.exec(`
      create table if not exists outbox_log (like outbox);
      create or replace function outbox_log_row() returns trigger language plpgsql as
        $$ begin insert into outbox_log select new.*; return new; end $$;
      drop trigger if exists outbox_log_row on outbox;
      create trigger outbox_log_row after insert on outbox for each row execute function outbox_log_row();`),
  );
}

/** The outbox rows `logOutbox` kept, in position order. */
export function outboxLog<T = Record<string, unknown>>(db: Database, columns = '*', where = 'true'): Promise<T[]> {
  return queryRows<T>(db.db, `select ${columns} from outbox_log where ${where} order by position`);
}
