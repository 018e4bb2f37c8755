import type { ServiceState } from '@ziti/contracts';
import { type Db, date, json, listRows, queryRows, toListPage } from '@ziti/platform';
import { defineQueryEntity, map, scalar } from '@ziti/zitiql';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import {
  edgeRouterWithPresenceOf,
  identityRoutersOf,
  routerOnlineOf,
  serviceRoutersOf,
} from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { SessionCreationBatcher } from './session-creation-batcher.store.ts';
import type { FailedServiceRequest, Session, SessionType, SessionViewer } from './sessions.domain.ts';
import type { CreationFacts, SessionStore, SessionUseFacts } from './sessions.ports.ts';

/**
 * A session's edge routers: the first `limit` live routers both the identity and the service
 * reach, connected first (the reference's `SORT BY connected DESC LIMIT 25`), then by name and id;
 * each row's `state` is `EdgeRouterWithPresence`, `rank` its place (1 first).
 */
const firstSharedRoutersOf = (identity: string, service: string, limit: string) =>
  `select ${edgeRouterWithPresenceOf('sr')} as state,
          row_number() over (order by ${routerOnlineOf('sr')} desc, sr.name collate "C", sr.id collate "C") as rank
     from edge_routers sr
    where not sr.deleted and sr.id in (${identityRoutersOf(identity)}) and sr.id in (${serviceRoutersOf(service)})
    order by rank limit ${limit}`;

/** Filterable fields of sessions (ZITI-FACTS §3.5: `token`, `apiSession`, `service`, `type`; plus `identity`). */
export const sessionQuery = defineQueryEntity({
  table: 'sessions',
  alias: 'x',
  fields: {
    id: scalar('x.id', 'string'),
    createdAt: scalar('x.created_at', 'datetime'),
    updatedAt: scalar('x.updated_at', 'datetime'),
    tags: map('x.tags'),
    isSystem: scalar('false', 'boolean'),
    token: scalar('x.token', 'string'),
    apiSession: scalar('x.api_session_id', 'string'),
    'apiSession.identity': scalar('x.identity_id', 'string'),
    identity: scalar('x.identity_id', 'string'),
    service: scalar('x.service_id', 'string'),
    'service.name': scalar((a) => `(select s.name from services s where s.id = ${a}.service_id)`, 'string'),
    type: scalar('x.type', 'string'),
  },
});

interface SessionRow {
  id: string;
  token: string;
  api_session_id: string;
  identity_id: string;
  service_id: string;
  type: SessionType;
  tags: unknown;
  created_at: Date | string;
  updated_at: Date | string;
}
/**
 * A session row's columns, named: a prepared statement must not select `*` (a migration adding a
 * column would make Postgres refuse a statement prepared before it).
 */
const sessionColumns = 'id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at';
const sessionOf = (r: SessionRow): Session => ({
  id: r.id,
  token: r.token,
  apiSessionId: r.api_session_id,
  identityId: r.identity_id,
  serviceId: r.service_id,
  type: r.type,
  tags: json<Record<string, unknown>>(r.tags) ?? {},
  createdAt: date(r.created_at),
  updatedAt: date(r.updated_at),
});

export class PgSessions implements SessionStore {
  /**
   * `batcher`: creations on the pool go through it: under load, the facts of several creations are
   * read in one statement and their inserts made in another.
   */
  constructor(
    private readonly db: Db,
    private readonly batcher?: SessionCreationBatcher,
  ) {}

  async createIfLive(session: Session): Promise<Session | 'ended'> {
    if (this.batcher) {
      const row = await this.batcher.insert(session);
      if (row.ended) return 'ended';
      if (row.created) return sessionOf(json<SessionRow>(row.created));
      // Not inserted by the grouped statement: its API session's row was unknown to a statement of
      // several or was being written, or another request made the session first.
    }
    return this.createAlone(session);
  }

  /** `createIfLive` in a statement of its own, which may wait for the API session's row. */
  private async createAlone(session: Session): Promise<Session | 'ended'> {
    // Another request of the same API session created it first: answer that one. Gone again by the
    // time it is read (deleted, or its API session ended), the insert is tried once more.
    for (let attempt = 0; ; attempt++) {
      const inserted = await this.insertIfLive(session);
      if (inserted !== 'taken') return inserted;
      const winner = await this.findFor(session.apiSessionId, session.serviceId, session.type);
      if (winner) return winner;
      if (attempt >= 2) throw new Error('the session of this API session, service and type keeps changing');
    }
  }

  private async insertIfLive(session: Session): Promise<Session | 'ended' | 'taken'> {
    // One statement, so one implicit transaction: the API session's row is created when unknown and
    // locked either way (`do update` locks it and sees its latest version): an end announced
    // meanwhile waits and then removes this session too; an end already applied refuses it.
    const [row] = await queryRows<SessionRow & { ended: boolean }>(
      this.db,
      `with a as (insert into api_sessions (id, identity_id, created_at) values ($3, $4, now())
                  on conflict (id) do update set id = excluded.id
                  returning ended_at),
            n as (insert into sessions (id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at)
                  select $1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9 from a where a.ended_at is null
                  on conflict (api_session_id, service_id, type) do nothing
                  returning ${sessionColumns})
       select n.*, (select a.ended_at is not null from a) as ended from (select 1) one left join n on true`,
      [
        session.id,
        session.token,
        session.apiSessionId,
        session.identityId,
        session.serviceId,
        session.type,
        JSON.stringify(session.tags),
        session.createdAt,
        session.updatedAt,
      ],
      { prepare: true },
    );
    if (row?.ended) return 'ended';
    if (row?.id) return sessionOf(row);
    return 'taken';
  }

  async findFor(apiSessionId: string, serviceId: string, type: SessionType): Promise<Session | undefined> {
    const [row] = await queryRows<SessionRow>(
      this.db,
      `select ${sessionColumns} from sessions where api_session_id = $1 and service_id = $2 and type = $3`,
      [apiSessionId, serviceId, type],
      { prepare: true },
    );
    return row ? sessionOf(row) : undefined;
  }

  async get(id: string): Promise<Session | undefined> {
    const [row] = await queryRows<SessionRow>(this.db, `select ${sessionColumns} from sessions where id = $1`, [id], {
      prepare: true,
    });
    return row ? sessionOf(row) : undefined;
  }

  async list(input: ListInput, scope: { identityId?: string }): Promise<ListPage<Session>> {
    const listed = await listRows<SessionRow>(this.db, sessionQuery, input, {
      ...(scope.identityId !== undefined ? { scope: { sql: 'x.identity_id = $1', params: [scope.identityId] } } : {}),
    });
    return toListPage(listed, sessionOf);
  }

  async delete(id: string): Promise<boolean> {
    return (
      (await queryRows(this.db, 'delete from sessions where id = $1 returning id', [id], { prepare: true })).length > 0
    );
  }

  async serviceNames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await queryRows<{ id: string; name: string }>(
      this.db,
      'select id, name from services where id = any($1::text[])',
      [ids],
      { prepare: true },
    );
    return new Map(rows.map((r) => [r.id, r.name]));
  }

  async sharedEdgeRouters(identityId: string, serviceId: string, limit: number): Promise<EdgeRouterWithPresence[]> {
    const rows = await queryRows<{ state: unknown }>(
      this.db,
      firstSharedRoutersOf('$1', '$2', '$3'),
      [identityId, serviceId, limit],
      { prepare: true },
    );
    return rows.map((r) => json<EdgeRouterWithPresence>(r.state));
  }

  async creationFacts(
    viewer: SessionViewer,
    serviceId: string,
    reuse: { apiSessionId: string; type: SessionType },
    routerLimit: number,
  ): Promise<CreationFacts | undefined> {
    const request: FactsRequest = { viewer, serviceId, reuse };
    const row = this.batcher
      ? await this.batcher.facts(request, routerLimit)
      : (await factsRows(this.db, [request], routerLimit))[0];
    if (!row) return undefined;
    return {
      access: { service: json<ServiceState>(row.state), dial: row.dial === true, bind: row.bind === true },
      ...(row.session ? { existing: sessionOf(json<SessionRow>(row.session)) } : {}),
      edgeRouters: json<EdgeRouterWithPresence[]>(row.routers),
      postureChecked: row.posture_checked,
    };
  }

  async useFacts(token: string, routerId: string): Promise<SessionUseFacts | undefined> {
    // One statement on every dial and bind (docs/adr/0014): the session by its unique token, then
    // each fact as an indexed probe of the links of this one identity, service and router (the
    // link tables themselves, so no view's grouping is computed for a pair it does not need).
    const [row] = await queryRows<{
      id: string;
      api_session_id: string;
      identity_id: string;
      service_id: string;
      type: SessionType;
      api_session_ended: boolean;
      identity_live: boolean;
      is_admin: boolean;
      service_live: boolean;
      identity_router: boolean;
      service_router: boolean;
      permitted: boolean;
    }>(
      this.db,
      `select s.id, s.api_session_id, s.identity_id, s.service_id, s.type,
              coalesce(a.ended_at is not null, false) as api_session_ended,
              i.id is not null as identity_live,
              coalesce(i.is_admin, false) as is_admin,
              exists (select 1 from services v where v.id = s.service_id and not v.deleted) as service_live,
              exists (select 1 from edge_router_policy_identities pi
                        join edge_router_policy_edge_routers pr on pr.policy_id = pi.policy_id
                       where pi.identity_id = s.identity_id and pr.edge_router_id = $2) as identity_router,
              exists (select 1 from service_edge_router_policy_services ps
                        join service_edge_router_policy_edge_routers pr on pr.policy_id = ps.policy_id
                       where ps.service_id = s.service_id and pr.edge_router_id = $2) as service_router,
              exists (select 1 from service_policy_identities pi
                        join service_policy_services ps on ps.policy_id = pi.policy_id
                       where pi.identity_id = s.identity_id and ps.service_id = s.service_id
                         and ps.type = s.type) as permitted
         from sessions s
         left join api_sessions a on a.id = s.api_session_id
         left join identities i on i.id = s.identity_id and not i.deleted
        where s.token = $1`,
      [token, routerId],
      { prepare: true },
    );
    if (!row) return undefined;
    return {
      session: {
        id: row.id,
        apiSessionId: row.api_session_id,
        identityId: row.identity_id,
        serviceId: row.service_id,
        type: row.type,
      },
      apiSessionEnded: row.api_session_ended,
      identityLive: row.identity_live,
      identityIsAdmin: row.is_admin,
      serviceLive: row.service_live,
      identityReachesRouter: row.identity_router,
      serviceReachesRouter: row.service_router,
      typePermitted: row.permitted,
    };
  }

  async recordFailure(identityId: string, f: FailedServiceRequest, keep: number): Promise<void> {
    await queryRows(
      this.db,
      `insert into failed_service_requests
         (identity_id, api_session_id, service_id, service_name, session_type, policy_failures, created_at)
       values ($1, $2, $3, $4, $5, $6::jsonb, $7)`,
      [identityId, f.apiSessionId, f.serviceId, f.serviceName, f.sessionType, JSON.stringify(f.policyFailures), f.when],
      { prepare: true },
    );
    await queryRows(
      this.db,
      `delete from failed_service_requests where identity_id = $1 and id not in
         (select id from failed_service_requests where identity_id = $1 order by id desc limit $2)`,
      [identityId, keep],
      { prepare: true },
    );
  }

  async failures(identityId: string): Promise<FailedServiceRequest[]> {
    const rows = await queryRows<{
      api_session_id: string;
      service_id: string;
      service_name: string;
      session_type: SessionType;
      policy_failures: unknown;
      created_at: string | Date;
    }>(
      this.db,
      `select api_session_id, service_id, service_name, session_type, policy_failures, created_at
         from failed_service_requests where identity_id = $1 order by id`,
      [identityId],
      {
        prepare: true,
      },
    );
    return rows.map((r) => ({
      apiSessionId: r.api_session_id,
      serviceId: r.service_id,
      serviceName: r.service_name,
      sessionType: r.session_type,
      policyFailures: json(r.policy_failures),
      when: date(r.created_at),
    }));
  }

  async identityExists(identityId: string): Promise<boolean> {
    return (
      (
        await queryRows(this.db, 'select 1 from identities where id = $1 and not deleted', [identityId], {
          prepare: true,
        })
      ).length > 0
    );
  }
}

/** The facts one creation asks for: the viewer's access to the service and its session of the pair. */
export interface FactsRequest {
  viewer: SessionViewer;
  serviceId: string;
  reuse: { apiSessionId: string; type: SessionType };
}

/** What the facts statement answers per request (none when the service is not visible). */
export interface FactsRow {
  ord: string | number;
  state: unknown;
  dial: boolean | null;
  bind: boolean | null;
  session: unknown;
  routers: unknown;
  posture_checked: boolean;
}

/**
 * The facts of each creation (`CreationFacts`), read in one statement for all of them: the service
 * when the viewer may see it, which types the viewer's service policies permit, the session the
 * API session already has for the service and type, the first `routerLimit` shared edge routers,
 * and whether a granting policy of the type names posture checks. It reads only (no lock, no
 * write); the domain decides on what it answers (`decideCreation`).
 */
export async function factsRows(
  db: Db,
  requests: FactsRequest[],
  routerLimit: number,
): Promise<(FactsRow | undefined)[]> {
  const rows = await queryRows<FactsRow>(
    db,
    `with r as (
       select * from unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[])
         with ordinality as r(service_id, identity_id, is_admin, api_session_id, type, ord))
     select r.ord, s.state, x.dial, x.bind,
            (select to_jsonb(ss) from sessions ss
              where ss.api_session_id = r.api_session_id and ss.service_id = r.service_id and ss.type = r.type) as session,
            (select coalesce(jsonb_agg(e.state order by e.rank), '[]'::jsonb)
               from (${firstSharedRoutersOf('r.identity_id', 'r.service_id', '$6')}) e) as routers,
            exists (select 1 from service_policy_identities pi
                      join service_policy_services ps on ps.policy_id = pi.policy_id and ps.service_id = r.service_id
                      join service_policies p on p.id = pi.policy_id and p.type = r.type
                      join service_policy_posture_checks pc on pc.policy_id = p.id
                     where pi.identity_id = r.identity_id) as posture_checked
       from r
       join services s on s.id = r.service_id and not s.deleted
       -- A lateral that is not flattened (offset 0): the view's grouping is computed for this pair
       -- only; a join, or a flattened lateral, groups the whole view (every identity × service).
       left join lateral (select v.identity_id, v.dial, v.bind from identity_services v
                           where v.service_id = r.service_id and v.identity_id = r.identity_id offset 0) x on true
      where r.is_admin or x.identity_id is not null`,
    [
      requests.map((q) => q.serviceId),
      requests.map((q) => q.viewer.identityId),
      requests.map((q) => q.viewer.isAdmin),
      requests.map((q) => q.reuse.apiSessionId),
      requests.map((q) => q.reuse.type),
      routerLimit,
    ],
    { prepare: true },
  );
  const byOrd: (FactsRow | undefined)[] = new Array(requests.length);
  for (const row of rows) byOrd[Number(row.ord) - 1] ??= row;
  return byOrd;
}

/** What the grouped insert answers per session: the row inserted, and whether its API session ended. */
export interface InsertRow {
  /** The session's row when this statement inserted it. */
  created?: unknown;
  /** Its API session has ended (true), is live (false), or was not reached by this statement (null). */
  ended: boolean | null;
}

/**
 * The inserts of several sessions the domain decided to create, in one statement (one commit).
 *
 * An API session's row is created when unknown (locked by its insert; only by a statement of that
 * one API session) or locked `for share` when known: an end (which updates the row) waits for these
 * inserts and then removes their sessions too, and an end committed first is seen (a locked row is
 * read at its latest version). The share lock writes nothing, unlike `createIfLive`'s upsert. A row
 * unknown to a statement of several API sessions, or being written by another transaction right
 * now, is neither: nothing is inserted for it (`ended` null), and the caller inserts it on its own.
 * The statement never waits on an API session's row while holding another, and inserts sessions in
 * key order, so it cannot deadlock with the consumer's transactions or with other statements.
 */
export async function insertRows(db: Db, sessions: Session[]): Promise<InsertRow[]> {
  const rows = await queryRows<{ ord: string | number; created: unknown; ended: boolean | null }>(
    db,
    `with c as (
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                            $7::text[], $8::timestamptz[], $9::timestamptz[])
         with ordinality as c(id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at, ord)),
     -- A statement waits on an API session's row only when it touches no other: policy's consumer
     -- writes several in one transaction, in event order, so a statement holding one row while
     -- waiting for another could close a cycle with it. Only a statement of one API session inserts
     -- an unknown one (the insert waits for a concurrent writer of the row), and a row being
     -- written is skipped, not waited for: its session then has no row here and the caller inserts
     -- it on its own, which may wait, holding nothing else.
     fresh as (
       insert into api_sessions (id, identity_id, created_at)
         select distinct on (api_session_id) api_session_id, identity_id, now() from c
          where (select count(distinct api_session_id) from c) = 1
          order by api_session_id
       on conflict (id) do nothing
       returning id, ended_at),
     known as (select id, ended_at from api_sessions where id in (select api_session_id from c)
                order by id for share skip locked),
     a as (select id, ended_at from fresh union all select id, ended_at from known),
     n as (
       insert into sessions (id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at)
         select c.id, c.token, c.api_session_id, c.identity_id, c.service_id, c.type, c.tags::jsonb,
                c.created_at, c.updated_at
           from c join a on a.id = c.api_session_id
          where a.ended_at is null
          order by c.api_session_id, c.service_id, c.type
       on conflict (api_session_id, service_id, type) do nothing
       returning ${sessionColumns})
     select c.ord, (select to_jsonb(n) from n where n.id = c.id) as created,
            (select a.ended_at is not null from a where a.id = c.api_session_id) as ended
       from c`,
    [
      sessions.map((x) => x.id),
      sessions.map((x) => x.token),
      sessions.map((x) => x.apiSessionId),
      sessions.map((x) => x.identityId),
      sessions.map((x) => x.serviceId),
      sessions.map((x) => x.type),
      sessions.map((x) => JSON.stringify(x.tags)),
      sessions.map((x) => x.createdAt),
      sessions.map((x) => x.updatedAt),
    ],
    { prepare: true },
  );
  const byOrd: InsertRow[] = sessions.map(() => ({ ended: null }));
  for (const row of rows)
    byOrd[Number(row.ord) - 1] = { ...(row.created ? { created: row.created } : {}), ended: row.ended };
  return byOrd;
}
