import type { RouterSyncStatus, RouterVersionInfo } from '@ziti/contracts';
import { type Db, type LockOption, date, entityStatesPage, json, queryRows, statesPageRows } from '@ziti/platform';
import type { RouterConnection, RouterKind, RouterPresence, RouterPresenceRecord } from '../shared/model.domain.ts';
import type { Row } from '../shared/store-helpers.store.ts';
import type { RouterPresenceStore } from './router-presence.ports.ts';

/** A presence's columns and its router's kind, named (`w`: the presence rows, `r`: their routers). */
const presenceColumns = (w: string) =>
  `${w}.router_id, ${w}.connection_id, ${w}.replica_id, ${w}.connected_at, ${w}.lease_until, ${w}.is_online,
   ${w}.hostname, ${w}.supported_protocols, ${w}.version_info, ${w}.sync_status, ${w}.changed_at, r.kind`;

/** `now()` plus a lease of `$n` milliseconds: leases run on the database's clock, one for every replica. */
const leaseFromNow = (n: number) => `now() + ($${n}::int * interval '1 millisecond')`;

function presenceFromRow(r: Row): RouterPresence {
  return {
    routerId: String(r.router_id),
    kind: r.kind as RouterKind,
    connectionId: String(r.connection_id),
    replicaId: String(r.replica_id),
    connectedAt: date(r.connected_at),
    leaseUntil: date(r.lease_until),
    isOnline: Boolean(r.is_online),
    hostname: String(r.hostname ?? ''),
    supportedProtocols: json<Record<string, string>>(r.supported_protocols, {}),
    versionInfo: json<RouterVersionInfo | null>(r.version_info, null),
    syncStatus: String(r.sync_status) as RouterSyncStatus,
    changedAt: date(r.changed_at),
  };
}

/** The written fields as `$2…$9` (`$1` is the router id). */
function recordParams(p: RouterPresenceRecord): unknown[] {
  return [
    p.routerId,
    p.connectionId,
    p.replicaId,
    p.connectedAt.toISOString(),
    p.isOnline,
    p.hostname,
    JSON.stringify(p.supportedProtocols),
    p.versionInfo === null ? null : JSON.stringify(p.versionInfo),
    p.syncStatus,
  ];
}

export class PgRouterPresenceStore implements RouterPresenceStore {
  constructor(private readonly db: Db) {}

  async get(routerId: string, options: LockOption = {}): Promise<RouterPresence | null> {
    const rows = await queryRows<Row>(
      this.db,
      `select ${presenceColumns('p')} from router_presence p join routers r on r.id = p.router_id
        where p.router_id = $1${options.forUpdate ? ' for update of p' : ''}`,
      [routerId],
    );
    return rows[0] ? presenceFromRow(rows[0]) : null;
  }

  async insert(p: RouterPresenceRecord, leaseMs: number): Promise<RouterPresence | null> {
    // A concurrent first report of the same router waits here for the other to commit, then
    // inserts nothing (the caller reads that one); a router that is gone inserts nothing either.
    const rows = await queryRows<Row>(
      this.db,
      `with written as (
         insert into router_presence (router_id, connection_id, replica_id, connected_at, is_online, hostname,
                                      supported_protocols, version_info, sync_status, lease_until, changed_at)
         select r.id, $2, $3, $4::timestamptz, $5, $6, $7::jsonb, $8::jsonb, $9, ${leaseFromNow(10)}, now()
           from routers r where r.id = $1
         on conflict (router_id) do nothing
         returning *)
       select ${presenceColumns('w')} from written w join routers r on r.id = w.router_id`,
      [...recordParams(p), leaseMs],
    );
    return rows[0] ? presenceFromRow(rows[0]) : null;
  }

  async update(p: RouterPresenceRecord, leaseMs: number, changed: boolean): Promise<RouterPresence> {
    const rows = await queryRows<Row>(
      this.db,
      `with written as (
         update router_presence set connection_id = $2, replica_id = $3, connected_at = $4::timestamptz,
                is_online = $5, hostname = $6, supported_protocols = $7::jsonb, version_info = $8::jsonb,
                sync_status = $9, lease_until = ${leaseFromNow(10)},
                changed_at = case when $11::boolean then now() else changed_at end
          where router_id = $1
         returning *)
       select ${presenceColumns('w')} from written w join routers r on r.id = w.router_id`,
      [...recordParams(p), leaseMs, changed],
    );
    if (!rows[0]) throw new Error(`the presence of router ${p.routerId} is gone`);
    return presenceFromRow(rows[0]);
  }

  async renewLeases(connections: RouterConnection[], leaseMs: number): Promise<RouterConnection[]> {
    if (connections.length === 0) return [];
    // Renewing and answering the rest is one statement: a connection superseded or lapsed while
    // it runs is either renewed before that change (and then superseded by it) or answered stale.
    const rows = await queryRows<{ router_id: string; connection_id: string }>(
      this.db,
      `with listed as (
         select distinct l.router_id, l.connection_id
           from unnest($1::text[], $2::text[]) as l(router_id, connection_id)),
       renewed as (
         update router_presence p set lease_until = ${leaseFromNow(3)}
           from listed l
          where p.router_id = l.router_id and p.connection_id = l.connection_id
            and p.is_online and p.lease_until >= now()
         returning p.router_id, p.connection_id)
       select l.router_id, l.connection_id from listed l
        where not exists (select 1 from renewed n where n.router_id = l.router_id and n.connection_id = l.connection_id)
        order by l.router_id collate "C", l.connection_id collate "C"`,
      [connections.map((c) => c.routerId), connections.map((c) => c.connectionId), leaseMs],
    );
    return rows.map((r) => ({ routerId: r.router_id, connectionId: r.connection_id }));
  }

  async lapse(limit: number): Promise<RouterPresence[]> {
    // Sweepers of every replica run this at once: each lapsed row goes to the one that locks it
    // first (the others skip it, or find it offline once it committed), so each lapse is announced once.
    const rows = await queryRows<Row>(
      this.db,
      `with lapsed as (
         update router_presence p set is_online = false, hostname = '', supported_protocols = '{}'::jsonb,
                sync_status = 'SYNC_DISCONNECTED', changed_at = now()
          where p.is_online and p.lease_until < now()
            and p.router_id in (select x.router_id from router_presence x
                                 where x.is_online and x.lease_until < now()
                                 order by x.lease_until limit $1 for update skip locked)
         returning p.*)
       select ${presenceColumns('l')} from lapsed l join routers r on r.id = l.router_id
        order by l.router_id collate "C"`,
      [limit],
    );
    return rows.map(presenceFromRow);
  }

  async of(routerIds: string[]): Promise<RouterPresence[]> {
    if (routerIds.length === 0) return [];
    const rows = await queryRows<Row>(
      this.db,
      `select ${presenceColumns('p')} from router_presence p join routers r on r.id = p.router_id
        where p.router_id = any($1::text[])`,
      [routerIds],
    );
    return rows.map(presenceFromRow);
  }

  async page(after: string | undefined, limit: number, ids?: string[]): Promise<RouterPresence[]> {
    const page = entityStatesPage({ type: 'routerPresence', after, limit, ids }, 'p.router_id');
    const source = {
      columns: presenceColumns('p'),
      from: 'router_presence p join routers r on r.id = p.router_id',
      key: 'p.router_id',
    };
    return (await statesPageRows<Row>(this.db, source, page)).map(presenceFromRow);
  }
}
