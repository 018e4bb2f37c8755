import { type Bus, type Database, type OutboxRelay, createReader, createUnitOfWork } from '@ziti/platform';
import type { PostureEvaluationReader, PostureEvaluator } from '../posture/posture-evaluation.ports.ts';
import { FabricCircuitPaths } from './fabric-route-paths.adapter.ts';
import { SessionCreationBatcher } from './session-creation-batcher.store.ts';
import { SessionUseAuthority } from './session-use.domain.ts';
import { SessionService } from './sessions.domain.ts';
import { PgSessions } from './sessions.store.ts';
import { sessionCalls } from './sessions.transport.ts';

/**
 * Edge sessions: the service behind the sessions operations (creations grouped on the pool by
 * `SessionCreationBatcher`, the rest in units of work) and the router edge's question about a session
 * presented on a dial or bind (`authorizeSessionUse`, one statement on the pool).
 */
export function sessionsWiring(d: {
  database: Database;
  relay: OutboxRelay;
  bus: Bus;
  posture: PostureEvaluator;
  /** The granting policies of a session's management detail. */
  grants: PostureEvaluationReader;
}) {
  const sessions = new SessionService(
    createUnitOfWork(d.database, d.relay, 'policy', (tx) => new PgSessions(tx)),
    createReader(d.database, (db) => new PgSessions(db, new SessionCreationBatcher(db))),
    d.posture,
    new FabricCircuitPaths(d.bus),
    d.grants,
  );
  const sessionUse = new SessionUseAuthority(createReader(d.database, (db) => new PgSessions(db)));
  return { sessions, calls: sessionCalls(sessionUse) };
}
