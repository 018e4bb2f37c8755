import type { AuthCore } from '../shared/core.wiring.ts';
import { BusApiSessionNotices } from './router-api-sessions.adapter.ts';
import { RouterApiSessions } from './router-api-sessions.domain.ts';
import { PgCertificateFingerprints } from './router-api-sessions.store.ts';
import { routerApiSessionCalls } from './router-api-sessions.transport.ts';

/** What edge routers are told of API sessions (docs/adr/0023): the calls fabric makes, and the notices of opened sessions. */
export function routerApiSessionsWiring(core: AuthCore) {
  const routerApiSessions = new RouterApiSessions(
    core.sessions,
    new PgCertificateFingerprints(core.database.db),
    core.ttl,
  );
  return {
    calls: routerApiSessionCalls(routerApiSessions),
    notices: new BusApiSessionNotices(core.bus, routerApiSessions, core.logger),
  };
}
