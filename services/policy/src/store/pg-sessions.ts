import type { EdgeRouterState, ServiceState } from '@ziti/contracts';
import { type Db, listRows, queryRows, toListPage } from '@ziti/platform';
import { defineQueryEntity, map, scalar } from '@ziti/zitiql';
import { PgAccessReads } from './pg-access-reads.ts';
import { PgPostureData } from './pg-posture-data.ts';
import type { ListInput, ListPage } from '../domain/ports.ts';
import type { Viewer } from '../domain/service-view.ts';
import type {
  ApiSessionStart,
  CreationContext,
  FailedServiceRequest,
  Session,
  SessionStore,
  SessionType,
} from '../domain/sessions.ts';

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
const json = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;
const sessionOf = (r: SessionRow): Session => ({
  id: r.id,
  token: r.token,
  apiSessionId: r.api_session_id,
  identityId: r.identity_id,
  serviceId: r.service_id,
  type: r.type,
  tags: json<Record<string, unknown>>(r.tags) ?? {},
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

export class PgSessions implements SessionStore {
  constructor(private readonly db: Db) {}

  async createIfLive(session: Session): Promise<Session | 'ended'> {
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
    // Another request of the same API session created it first.
    return (await this.findFor(session.apiSessionId, session.serviceId, session.type))!;
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

  async sharedEdgeRouters(identityId: string, serviceId: string, limit: number): Promise<EdgeRouterState[]> {
    return new PgAccessReads(this.db).firstSharedEdgeRouters(identityId, serviceId, limit);
  }

  async creationContext(
    viewer: Viewer,
    serviceId: string,
    reuse: { apiSessionId: string; type: SessionType },
    routerLimit: number,
  ): Promise<CreationContext | undefined> {
    return (await this.createIfClear(viewer, serviceId, reuse, routerLimit)).context;
  }

  async createIfClear(
    viewer: Viewer,
    serviceId: string,
    reuse: { apiSessionId: string; type: SessionType },
    routerLimit: number,
    candidate?: Session,
  ): Promise<{ context?: CreationContext; created?: Session | 'ended' }> {
    // The context and, when `candidate` is given and nothing stands in its way (visible, the type
    // permitted, no session yet, no posture check, a shared router), its insert: one statement.
    // The API session's row is created when unknown and locked either way, as in `createIfLive`.
    const [row] = await queryRows<{
      state: unknown;
      dial: boolean | null;
      bind: boolean | null;
      session: unknown;
      routers: unknown;
      posture_checked: boolean;
      created: unknown;
      ended: boolean | null;
    }>(
      this.db,
      `with c as (
         select s.id, s.state, x.dial, x.bind,
                (select to_jsonb(ss) from sessions ss
                  where ss.api_session_id = $4 and ss.service_id = s.id and ss.type = $5) as session,
                (select coalesce(jsonb_agg(r.state order by r.name, r.id), '[]'::jsonb) from (
                   select r.state, r.name, r.id from edge_routers r
                    where not r.deleted
                      and r.id in (select ir.edge_router_id from identity_edge_routers ir where ir.identity_id = $2)
                      and r.id in (select sr.edge_router_id from service_edge_routers sr where sr.service_id = $1)
                    order by r.name, r.id limit $6) r) as routers,
                exists (select 1 from service_policy_identities pi
                          join service_policy_services ps on ps.policy_id = pi.policy_id and ps.service_id = s.id
                          join service_policies p on p.id = pi.policy_id and p.type = $5
                          join service_policy_posture_checks c on c.policy_id = p.id
                         where pi.identity_id = $2) as posture_checked
           from services s
           left join identity_services x on x.service_id = $1 and x.identity_id = $2
          where s.id = $1 and not s.deleted and ($3 or x.identity_id is not null)),
       a as (insert into api_sessions (id, identity_id, created_at)
               select $4, $8, now() from c
                where $7::text is not null and c.session is null and not c.posture_checked
                  and case when $5 = 'Bind' then c.bind else c.dial end
                  and jsonb_array_length(c.routers) > 0
             on conflict (id) do update set id = excluded.id
             returning ended_at),
       n as (insert into sessions (id, token, api_session_id, identity_id, service_id, type, tags, created_at, updated_at)
               select $7, $9, $4, $8, $1, $5, $10::jsonb, $11, $11 from a where a.ended_at is null
             on conflict (api_session_id, service_id, type) do nothing
             returning ${sessionColumns})
       select c.state, c.dial, c.bind, c.session, c.routers, c.posture_checked,
              (select to_jsonb(n) from n) as created, (select a.ended_at is not null from a) as ended
         from c`,
      [
        serviceId,
        viewer.identityId,
        viewer.isAdmin,
        reuse.apiSessionId,
        reuse.type,
        routerLimit,
        candidate?.id ?? null,
        candidate?.identityId ?? viewer.identityId,
        candidate?.token ?? null,
        JSON.stringify(candidate?.tags ?? {}),
        candidate?.createdAt ?? null,
      ],
      { prepare: true },
    );
    if (!row) return {};
    const context: CreationContext = {
      access: { service: json<ServiceState>(row.state), dial: row.dial === true, bind: row.bind === true },
      ...(row.session ? { existing: sessionOf(json<SessionRow>(row.session)) } : {}),
      edgeRouters: json<EdgeRouterState[]>(row.routers),
      postureChecked: row.posture_checked,
    };
    if (row.ended) return { context, created: 'ended' };
    if (row.created) return { context, created: sessionOf(json<SessionRow>(row.created)) };
    // Inserted by nobody: not clear, or another request of the same API session created it first.
    if (row.ended === false && candidate) {
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
      when: new Date(r.created_at),
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

/**
 * The API sessions policy knows of, kept from auth's apiSession events in the consumer's transaction.
 * Every write is order-independent: an end wins over a late start, a start never reopens an end.
 */
export class PgApiSessions {
  constructor(private readonly db: Db) {}

  async started(s: ApiSessionStart) {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, auth_method, is_mfa_required, is_mfa_complete, config_types, created_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (id) do update set auth_method = excluded.auth_method, is_mfa_required = excluded.is_mfa_required,
         is_mfa_complete = api_sessions.is_mfa_complete or excluded.is_mfa_complete,
         config_types = excluded.config_types, created_at = excluded.created_at`,
      [s.id, s.identityId, s.authMethod, s.isMfaRequired, s.isMfaComplete, s.configTypes, s.createdAt],
      { prepare: true },
    );
  }

  async mfaPassed(id: string, identityId: string, at: string) {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, is_mfa_complete, mfa_passed_at, created_at)
       values ($1, $2, true, $3, $3)
       on conflict (id) do update set is_mfa_complete = true,
         mfa_passed_at = greatest(api_sessions.mfa_passed_at, excluded.mfa_passed_at)`,
      [id, identityId, at],
      { prepare: true },
    );
  }

  /** Marks the API session ended and removes its edge sessions; returns how many. */
  async ended(id: string, identityId: string, at: string): Promise<number> {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, created_at, ended_at) values ($1, $2, $3, $3)
       on conflict (id) do update set ended_at = coalesce(api_sessions.ended_at, excluded.ended_at)`,
      [id, identityId, at],
      { prepare: true },
    );
    // Locks the row: a session creation that holds it finishes first, and its session goes here.
    await queryRows(this.db, 'select 1 from api_sessions where id = $1 for update', [id], { prepare: true });
    const removed = await queryRows(this.db, 'delete from sessions where api_session_id = $1 returning id', [id], {
      prepare: true,
    });
    // Ended API sessions are kept an hour against late events, then forgotten.
    await queryRows(this.db, "delete from api_sessions where ended_at < now() - interval '1 hour'");
    return removed.length;
  }
}
