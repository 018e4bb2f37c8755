import type { Database, Logger } from '@ziti/platform';
import { RetentionSweeper } from './retention.domain.ts';
import { PgRetentionStore } from './retention.store.ts';

/** The retention sweeper: records older than `retentionDays` removed (hourly unless `intervalMs`). */
export const retentionWiring = (
  database: Database,
  logger: Logger,
  o: { retentionDays: number; intervalMs?: number },
) =>
  new RetentionSweeper(new PgRetentionStore(database.db), {
    retentionDays: o.retentionDays,
    ...(o.intervalMs === undefined ? {} : { intervalMs: o.intervalMs }),
    onError: (err) => logger.warn({ err }, 'audit retention sweep failed; will retry'),
    onSwept: (swept) => {
      if (swept.records > 0) logger.info({ ...swept, retentionDays: o.retentionDays }, 'audit records swept');
    },
  });
