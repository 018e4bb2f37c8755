import type { ServiceState } from '@ziti/contracts';
import { type Db, date, json, listRows, queryRows, toListPage } from '@ziti/platform';
import { defineQueryEntity, map, scalar } from '@ziti/zitiql';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { PgAccessReads } from '../access/access-reads.store.ts';
import { PgPostureData } from '../posture-data/posture-data.store.ts';
import { edgeRouterWithPresenceOf, routerOnlineOf } from '../read-models/read-model-queries.store.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Viewer } from '../services/service-view.domain.ts';
import type { SessionCreationBatcher } from './session-creation-batcher.store.ts';
import type { FailedServiceRequest, Session, SessionType } from './sessions.domain.ts';
import type { CreationContext, SessionStore, SessionUseFacts } from './sessions.ports.ts';

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
  /** `batcher`: creations on the pool go through it (several in one statement under load). */
  constructor(
    private readonly db: Db,
    private readonly batcher?: SessionCreationBatcher,
  ) {}

  async createIfLive(session: Session): Promise<Session | 'ended'> {
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
    return new PgAccessReads(this.db).firstSharedEdgeRouters(identityId, serviceId, limit);
  }

  async createIfClear(
    viewer: Viewer,
    serviceId: string,
    reuse: { apiSessionId: string; type: SessionType },
    routerLimit: number,
    candidate: Session,
  ): Promise<{ context?: CreationContext; created?: Session | 'ended' }> {
    const request: CreationRequest = { viewer, serviceId, reuse, candidate };
    const row = this.batcher
      ? await this.batcher.submit(request, routerLimit)
      : (await creationRows(this.db, [request], routerLimit))[0];
    if (!row) return {};
    const context: CreationContext = {
      access: { service: json<ServiceState>(row.state), dial: row.dial === true, bind: row.bind === true },
      ...(row.session ? { existing: sessionOf(json<SessionRow>(row.session)) } : {}),
      edgeRouters: json<EdgeRouterWithPresence[]>(row.routers),
      postureChecked: row.posture_checked,
    };
    if (row.ended) return { context, created: 'ended' };
    if (row.created) return { context, created: sessionOf(json<SessionRow>(row.created)) };
    // Clear, but the API session's row was being inserted by another request: insert after it.
    if (row.clear && row.ended === null) return { context, created: await this.createIfLive(candidate) };
    // Inserted by nobody: not clear, or another request of the same API session created it first.
    if (row.ended === false) {
      const existing = await this.findFor(candidate.apiSessionId, candidate.serviceId, candidate.type);
      if (existing) return { context, created: existing };
    }
    return { context };
  }

  async grantingPolicies(
    identityId: string,
    serviceId: string,
    type: SessionType,
  ): Promise<{ policyId: string; name: string }[]> {
    const granting = await new PgPostureData(this.db).grantingPolicies(identityId, [serviceId], type);
    return granting.map((g) => ({ policyId: g.policyId, name: g.policyName }));
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

/** One creation of `createIfClear`: the context of `candidate`'s pair, and its insert when clear. */
export interface CreationRequest {
  viewer: Viewer;
  serviceId: string;
  reuse: { apiSessionId: string; type: SessionType };
  candidate: Session;
}

/** What the statement answers per request (none when the service is not visible). */
export interface CreationRow {
  ord: string | number;
  state: unknown;
  dial: boolean | null;
  bind: boolean | null;
  session: unknown;
  routers: unknown;
  posture_checked: boolean;
  created: unknown;
  ended: boolean | null;
  clear: boolean;
}

/**
 * The creation context of each request and, for those with nothing in their candidate's way
 * (visible, the type permitted, no session of the pair yet, no posture check named by a granting
 * policy of the type, a shared router), the insert: one statement, so one commit, for all of them.
 *
 * An API session's row is created when unknown (locked by its insert; only by a statement of that
 * one API session) or locked `for share` when known: an end (which updates the row) waits for these
 * inserts and then removes their sessions too, and an end committed first is seen (a locked row is
 * read at its latest version). The share lock writes nothing, unlike `createIfLive`'s upsert. A row
 * unknown to a statement of several API sessions, or being written by another transaction right
 * now, is neither: nothing is inserted for it (`clear` without `ended`), and the caller inserts it
 * with `createIfLive`. The statement never waits on an API session's row while holding another, and
 * inserts sessions in key order, so it cannot deadlock with the consumer's transactions or with
 * other statements.
 */
export async function creationRows(
  db: Db,
  requests: CreationRequest[],
  routerLimit: number,
): Promise<(CreationRow | undefined)[]> {
  const rows = await queryRows<CreationRow>(
    db,
    `with r as (
       select * from unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::text[],
                            $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
         with ordinality as r(service_id, identity_id, is_admin, api_session_id, type,
                              cand_id, cand_identity, token, tags, created_at, ord)),
     c as (
       select r.*, s.state, x.dial, x.bind,
              (select to_jsonb(ss) from sessions ss
                where ss.api_session_id = r.api_session_id and ss.service_id = r.service_id and ss.type = r.type) as session,
              -- Connected first, as the reference (SORT BY connected DESC LIMIT 25), each with its presence.
              (select coalesce(jsonb_agg(e.state order by e.online desc, e.name collate "C", e.id collate "C"), '[]'::jsonb) from (
                 select ${edgeRouterWithPresenceOf('e')} as state, ${routerOnlineOf('e')} as online, e.name, e.id
                   from edge_routers e
                  where not e.deleted
                    and e.id in (select ir.edge_router_id from identity_edge_routers ir where ir.identity_id = r.identity_id)
                    and e.id in (select sr.edge_router_id from service_edge_routers sr where sr.service_id = r.service_id)
                  order by ${routerOnlineOf('e')} desc, e.name collate "C", e.id collate "C" limit $11) e) as routers,
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
        where r.is_admin or x.identity_id is not null),
     clear as (
       select * from c
        where c.cand_id is not null and c.session is null and not c.posture_checked
          and case when c.type = 'Bind' then c.bind else c.dial end
          and jsonb_array_length(c.routers) > 0),
     -- A statement waits on an API session's row only when it touches no other: policy's consumer
     -- writes several in one transaction, in event order, so a statement holding one row while
     -- waiting for another could close a cycle with it. Only a statement of one API session inserts
     -- an unknown one (the insert waits for a concurrent writer of the row), and a row being
     -- written is skipped, not waited for: its request then has no row here and the caller inserts
     -- it with createIfLive, which may wait, holding nothing else.
     fresh as (
       insert into api_sessions (id, identity_id, created_at)
         select distinct on (api_session_id) api_session_id, cand_identity, now() from clear
          where (select count(distinct api_session_id) from clear) = 1
          order by api_session_id
       on conflict (id) do nothing
       returning id, ended_at),
     known as (select id, ended_at from api_sessions where id in (select api_session_id from clear)
                order by id for share skip locked),
     a as (select id, ended_at from fresh union all select id, ended_at from known),
     n as (
       insert into sessions (id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at)
         select cl.cand_id, cl.token, cl.api_session_id, cl.cand_identity, cl.service_id, cl.type, cl.tags::jsonb,
                cl.created_at, cl.created_at
           from clear cl join a on a.id = cl.api_session_id
          where a.ended_at is null
          order by cl.api_session_id, cl.service_id, cl.type
       on conflict (api_session_id, service_id, type) do nothing
       returning ${sessionColumns})
     select c.ord, c.state, c.dial, c.bind, c.session, c.routers, c.posture_checked,
            (select to_jsonb(n) from n where n.id = c.cand_id) as created,
            (select a.ended_at is not null from a where a.id = c.api_session_id) as ended,
            exists (select 1 from clear where clear.ord = c.ord) as clear
       from c`,
    [
      requests.map((q) => q.serviceId),
      requests.map((q) => q.viewer.identityId),
      requests.map((q) => q.viewer.isAdmin),
      requests.map((q) => q.reuse.apiSessionId),
      requests.map((q) => q.reuse.type),
      requests.map((q) => q.candidate.id),
      requests.map((q) => q.candidate.identityId),
      requests.map((q) => q.candidate.token),
      requests.map((q) => JSON.stringify(q.candidate.tags)),
      requests.map((q) => q.candidate.createdAt),
      routerLimit,
    ],
    { prepare: true },
  );
  const byOrd: (CreationRow | undefined)[] = new Array(requests.length);
  for (const row of rows) byOrd[Number(row.ord) - 1] ??= row;
  return byOrd;
}
