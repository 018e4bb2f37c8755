import { type Bus, type Database, type Db, type OutboxRelay, createReader, createUnitOfWork } from '@ziti/platform';
import type { AccessLinks } from '../access/access.ports.ts';
import { PostureEvaluation } from './posture-evaluation.domain.ts';
import type { PostureEvaluator } from './posture-evaluation.ports.ts';
import { BusApiSessionDirectory } from './auth-api-sessions.adapter.ts';
import { PostureDataService } from './posture-data.domain.ts';
import type { PostureDataStores } from './posture-data.ports.ts';
import { PgPostureData } from './posture-data.store.ts';

/**
 * Posture data and its evaluation (ZITI-FACTS §6.3, §7.3, §10.1): what clients report, kept per
 * identity and API session, and the evaluator the service list and session creation ask.
 */
export function postureDataWiring(d: {
  database: Database;
  relay: OutboxRelay;
  bus: Bus;
  links: (db: Db) => AccessLinks;
}) {
  const reads = createReader(d.database, (db) => new PgPostureData(db));
  const posture: PostureEvaluator = new PostureEvaluation(reads);
  const stores = (tx: Db): PostureDataStores => ({ data: new PgPostureData(tx), links: d.links(tx) });
  const postureData = new PostureDataService(
    createUnitOfWork(d.database, d.relay, 'policy', stores),
    createReader(d.database, stores),
    new BusApiSessionDirectory(d.bus),
  );
  return { reads, posture, postureData };
}
