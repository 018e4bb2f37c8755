import { type Db, date, dateOrNull, json, queryRows } from '@ziti/platform';
import type { PostureCheck } from './posture-checks.domain.ts';
import { postureCheckFromRow } from './posture-checks.store.ts';
import type { GrantingServicePolicy, PostureEvaluationStore } from './posture-evaluation.ports.ts';
import type {
  ApiSessionPosture,
  IdentityPostureData,
  PostureResponseRecord,
  ProcessData,
  PromptedService,
} from './posture-data.domain.ts';
import type { PostureDataStore } from './posture-data.ports.ts';

type Row = Record<string, unknown>;

/**
 * Forgets what belongs to one API session (its endpoint state) once it ended; the identity's OS,
 * MAC, domain and process reports stay, as the reference keeps them per identity. Called by the
 * handler of auth's `apiSession.deleted` / `apiSession.expired`.
 */
export async function forgetApiSessionPosture(db: Db, apiSessionId: string): Promise<void> {
  await queryRows(db, 'delete from api_session_posture where api_session_id = $1', [apiSessionId], { prepare: true });
}

/** Posture data (identity_posture_responses, api_session_posture, api_sessions) and the evaluation's reads. */
export class PgPostureData implements PostureDataStore, PostureEvaluationStore {
  constructor(private readonly db: Db) {}

  async identityExists(identityId: string): Promise<boolean> {
    return (
      (
        await queryRows(this.db, 'select 1 from identities where id = $1 and not deleted', [identityId], {
          prepare: true,
        })
      ).length > 0
    );
  }

  async load(identityId: string): Promise<IdentityPostureData> {
    const [responses, sessions, states] = await Promise.all([
      queryRows<Row>(
        this.db,
        `select kind, check_key, path, posture_check_id, api_session_id, data, reported_at
           from identity_posture_responses where identity_id = $1 order by reported_at, check_key, path`,
        [identityId],
        { prepare: true },
      ),
      queryRows<{ id: string; mfa_passed_at: unknown }>(
        this.db,
        'select id, mfa_passed_at from api_sessions where identity_id = $1 and ended_at is null',
        [identityId],
        { prepare: true },
      ),
      queryRows<{ api_session_id: string; woken_at: unknown; unlocked_at: unknown; updated_at: unknown }>(
        this.db,
        'select api_session_id, woken_at, unlocked_at, updated_at from api_session_posture where identity_id = $1',
        [identityId],
        { prepare: true },
      ),
    ]);
    const pd: IdentityPostureData = { processes: [], processByPath: new Map(), apiSessions: new Map() };
    const byCheck = new Map<string, ProcessData>();
    for (const r of responses) {
      const reported = {
        postureCheckId: String(r.posture_check_id),
        apiSessionId: String(r.api_session_id),
        reportedAt: date(r.reported_at),
      };
      const data = json<Record<string, unknown>>(r.data);
      switch (r.kind) {
        case 'OS':
          pd.os = { ...reported, type: String(data.type), version: String(data.version), build: String(data.build) };
          break;
        case 'MAC':
          pd.mac = { ...reported, addresses: data.addresses as string[] };
          break;
        case 'DOMAIN':
          pd.domain = { ...reported, name: String(data.name) };
          break;
        case 'PROCESS': {
          const p: ProcessData = {
            ...reported,
            path: String(r.path),
            isRunning: data.isRunning === true,
            binaryHash: String(data.binaryHash ?? ''),
            signerFingerprints: (data.signerFingerprints as string[]) ?? [],
          };
          // In report order: the last of each check id and of each path wins.
          byCheck.delete(String(r.check_key));
          byCheck.set(String(r.check_key), p);
          if (p.path) pd.processByPath.set(p.path, p);
          break;
        }
      }
    }
    pd.processes = [...byCheck.values()];
    const session = (id: string): ApiSessionPosture => {
      let s = pd.apiSessions.get(id);
      if (!s) {
        s = {
          apiSessionId: id,
          live: false,
          mfaPassedAt: null,
          wokenAt: null,
          unlockedAt: null,
          endpointStateAt: null,
        };
        pd.apiSessions.set(id, s);
      }
      return s;
    };
    for (const r of sessions) {
      const s = session(r.id);
      s.live = true;
      s.mfaPassedAt = dateOrNull(r.mfa_passed_at);
    }
    for (const r of states) {
      const s = session(r.api_session_id);
      s.wokenAt = dateOrNull(r.woken_at);
      s.unlockedAt = dateOrNull(r.unlocked_at);
      s.endpointStateAt = dateOrNull(r.updated_at);
    }
    return pd;
  }

  async record(identityId: string, apiSessionId: string, responses: PostureResponseRecord[], at: Date): Promise<void> {
    for (const r of responses) {
      if (r.kind === 'ENDPOINT_STATE') {
        await queryRows(
          this.db,
          `insert into api_session_posture (api_session_id, identity_id, woken_at, unlocked_at, updated_at)
           values ($1, $2, case when $3 then $5::timestamptz end, case when $4 then $5::timestamptz end, $5)
           on conflict (api_session_id) do update set
             woken_at = case when $3 then $5::timestamptz else api_session_posture.woken_at end,
             unlocked_at = case when $4 then $5::timestamptz else api_session_posture.unlocked_at end,
             updated_at = $5`,
          [apiSessionId, identityId, r.woken, r.unlocked, at],
          { prepare: true },
        );
        continue;
      }
      const { kind, postureCheckId, ...data } = r;
      const checkKey = kind === 'PROCESS' ? postureCheckId : '';
      const path = r.kind === 'PROCESS' ? r.path : '';
      await queryRows(
        this.db,
        `insert into identity_posture_responses
           (identity_id, kind, check_key, path, posture_check_id, api_session_id, data, reported_at)
         values ($1, $2, $3, $4, $5, $6, $7::jsonb, $8)
         on conflict (identity_id, kind, check_key, path) do update set
           posture_check_id = excluded.posture_check_id, api_session_id = excluded.api_session_id,
           data = excluded.data, reported_at = excluded.reported_at`,
        [identityId, kind, checkKey, path, postureCheckId, apiSessionId, JSON.stringify(data), at],
        { prepare: true },
      );
    }
  }

  async promptedServices(
    identityId: string,
    onWake: boolean,
    onUnlock: boolean,
    timeoutAbove: number,
  ): Promise<PromptedService[]> {
    const rows = await queryRows<{ id: string; name: string; timeout: string | number }>(
      this.db,
      `select s.id, s.name, min((c.data->>'timeoutSeconds')::bigint) as timeout
         from posture_checks c
         join service_policy_posture_checks x on x.posture_check_id = c.id
         join service_policy_services ps on ps.policy_id = x.policy_id
         join identity_services a on a.service_id = ps.service_id and a.identity_id = $1
         join services s on s.id = ps.service_id and not s.deleted
        where c.type_id = 'MFA'
          and (($2 and (c.data->>'promptOnWake')::boolean) or ($3 and (c.data->>'promptOnUnlock')::boolean))
          and ((c.data->>'timeoutSeconds')::bigint = -1 or (c.data->>'timeoutSeconds')::bigint > $4)
        group by s.id, s.name order by s.id collate "C"`,
      [identityId, onWake, onUnlock, timeoutAbove],
      { prepare: true },
    );
    return rows.map((r) => ({ id: r.id, name: r.name, timeout: Number(r.timeout) }));
  }

  async anyCheckExists(): Promise<boolean> {
    return (await queryRows(this.db, 'select 1 from posture_checks limit 1')).length > 0;
  }

  async grantingPolicies(
    identityId: string,
    serviceIds: string[],
    type?: 'Dial' | 'Bind',
  ): Promise<GrantingServicePolicy[]> {
    if (serviceIds.length === 0) return [];
    const rows = await queryRows<{
      service_id: string;
      id: string;
      name: string;
      type: 'Dial' | 'Bind';
      has_checks: boolean;
    }>(
      this.db,
      `select ps.service_id, p.id, p.name, p.type,
              exists (select 1 from service_policy_posture_checks c where c.policy_id = p.id) as has_checks
         from service_policy_identities pi
         join service_policy_services ps on ps.policy_id = pi.policy_id and ps.service_id = any($2::text[])
         join service_policies p on p.id = pi.policy_id and ($3::text is null or p.type = $3)
        where pi.identity_id = $1
        order by ps.service_id collate "C", p.id collate "C"`,
      [identityId, serviceIds, type ?? null],
      { prepare: true },
    );
    return rows.map((r) => ({
      serviceId: r.service_id,
      policyId: r.id,
      policyName: r.name,
      type: r.type,
      hasChecks: r.has_checks,
    }));
  }

  async checksOfPolicies(policyIds: string[]): Promise<Map<string, PostureCheck[]>> {
    const out = new Map<string, PostureCheck[]>();
    if (policyIds.length === 0) return out;
    const rows = await queryRows<Row>(
      this.db,
      `select x.policy_id, c.id, c.name, c.type_id, c.version, c.role_attributes, c.data, c.tags, c.created_at, c.updated_at
         from service_policy_posture_checks x
         join posture_checks c on c.id = x.posture_check_id
        where x.policy_id = any($1::text[]) order by x.policy_id collate "C", c.name collate "C", c.id collate "C"`,
      [policyIds],
      { prepare: true },
    );
    for (const r of rows) {
      const list = out.get(String(r.policy_id)) ?? [];
      list.push(postureCheckFromRow(r));
      out.set(String(r.policy_id), list);
    }
    return out;
  }

  postureData(identityId: string): Promise<IdentityPostureData> {
    return this.load(identityId);
  }
}
