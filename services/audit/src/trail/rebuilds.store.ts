import { type Db, queryRows } from '@ziti/platform';

/**
 * Whether each of these consumers has caught up with its owner once (its cursor's first resync, which
 * fills the entity states and sets where its records start, is done): until then the trail would miss
 * changes that its first resync then skips, so audit is not ready.
 */
export async function firstResyncsDone(db: Db, durables: string[]): Promise<boolean> {
  const [row] = await queryRows<{ done: number }>(
    db,
    `select count(*)::int as done from event_cursors where consumer = any($1::text[]) and resynced_at is not null`,
    [durables],
  );
  return (row?.done ?? 0) === durables.length;
}
