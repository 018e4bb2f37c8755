import { type Database, createReader } from '@ziti/platform';
import type { PostureEvaluator } from '../posture/posture-evaluation.ports.ts';
import { ServiceViewService } from './service-view.domain.ts';
import { PgServiceView } from './service-view.store.ts';

/** Every identity's view of its services (ADR 0010), with the posture queries `posture` evaluates. */
export const servicesWiring = (database: Database, posture: PostureEvaluator) =>
  new ServiceViewService(
    createReader(database, (db) => new PgServiceView(db)),
    posture,
  );
