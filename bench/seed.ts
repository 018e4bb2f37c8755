/**
 * Seeds identities straight into auth's own tables, for the scenarios that need more of them than
 * the API creates in the time at hand (~100/s): `lists` (100,000) and, optionally, `bulk`'s first
 * 10,000 (`BENCH_BULK_PRESEED=sql`).
 *
 * The rows are exactly what auth writes when `POST /identities` (no enrollment) creates one: one
 * identity is created through the API first as the template; its `identities` row is copied
 * column for column (every column the table has, so columns added later are copied too) with only
 * id (a 9-character base62 id like auth's), name, role attributes and timestamps changed; and, like
 * auth's `writeOutbox`, an `identity.created` outbox row is written for each, its position taken
 * from `event_position` in the same transaction, its payload the template's payload with the same
 * four fields changed. The relay publishes these events and policy applies them as it does for
 * API-created identities. Nothing else is written for such an identity by auth (no authenticator,
 * no MFA, no enrollment in pki-enrollment), so the list renders them as it renders API-created ones.
 */
import pg from 'pg';
import { eventTypes, subjects } from '@ziti/contracts';
import { shortId } from '@ziti/platform';
import type { LocalCluster } from '../deploy/local-cluster.ts';
import { create } from './common.ts';

export interface SeedResult {
  seeded: number;
  seconds: number;
  templateId: string;
  outboxPositions: { first: number; last: number };
}

/**
 * Seeds `count` identities named `name(i)` with role attributes `attrs(i)` (i from 0), in
 * transactions of `batch`. `adminToken` creates the API template (named `templateName`).
 */
export async function seedIdentities(
  cluster: LocalCluster,
  adminToken: string,
  count: number,
  name: (i: number) => string,
  attrs: (i: number) => string[],
  templateName: string,
  batch = 5_000,
): Promise<SeedResult> {
  const started = performance.now();
  const templateId = await create(cluster, adminToken, '/identities', {
    name: templateName,
    type: 'User',
    isAdmin: false,
    roleAttributes: attrs(0),
  });
  const db = new pg.Client({ connectionString: cluster.databases.auth });
  await db.connect();
  try {
    const columns = (
      await db.query<{ column_name: string }>(
        `select column_name from information_schema.columns where table_schema = current_schema() and table_name = 'identities' order by ordinal_position`,
      )
    ).rows.map((r) => r.column_name);
    // The template's identity.created event as audit applied it (auth's outbox drops an event once
    // published): the state it carried.
    const audit = new pg.Client({ connectionString: cluster.databases.audit });
    await audit.connect();
    let template: { subject: string; type: string; version: number; payload: Record<string, unknown> } | undefined;
    try {
      for (let tries = 0; tries < 100 && !template; tries++) {
        const row = (
          await audit.query<{ state: Record<string, unknown> }>(
            `select state from entity_states where entity_type = 'identities' and id = $1`,
            [templateId],
          )
        ).rows[0];
        if (row)
          template = {
            subject: subjects.event('auth', eventTypes.identityCreated.type),
            type: eventTypes.identityCreated.type,
            version: eventTypes.identityCreated.version,
            payload: row.state,
          };
        else await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await audit.end();
    }
    if (!template) throw new Error(`seed: audit never applied the template ${templateId}`);
    for (const key of ['id', 'name', 'roleAttributes', 'createdAt', 'updatedAt'])
      if (!(key in template.payload)) throw new Error(`seed: identity.created payload has no ${key}`);

    const changed: Record<string, string> = {
      id: 'r.id',
      name: 'r.name',
      role_attributes: 'array(select jsonb_array_elements_text(r.attrs::jsonb))',
      created_at: 'r.at::timestamptz',
      updated_at: 'r.at::timestamptz',
    };
    const insertIdentities = `insert into identities (${columns.map((c) => `"${c}"`).join(', ')})
      select ${columns.map((c) => changed[c] ?? `t."${c}"`).join(', ')}
        from identities t, unnest($1::text[], $2::text[], $3::text[], $4::text[]) as r(id, name, attrs, at)
       where t.id = $5`;
    const insertOutbox = `with p as (update event_position set last = last + $1 where id = 1 returning last),
          n as (select pg_notify('ziti_outbox', '') as notified)
        insert into outbox (position, subject, type, version, payload)
        select p.last - $1 + r.ord, $6, $7, $8,
               $9::jsonb || jsonb_build_object('id', r.id, 'name', r.name, 'roleAttributes', r.attrs::jsonb,
                                                'createdAt', r.at, 'updatedAt', r.at)
          from p, n, unnest($2::text[], $3::text[], $4::text[], $5::text[]) with ordinality as r(id, name, attrs, at, ord)
        returning position`;
    let first = Number.POSITIVE_INFINITY;
    let last = 0;
    for (let from = 0; from < count; from += batch) {
      const n = Math.min(batch, count - from);
      const ids: string[] = [];
      const names: string[] = [];
      const attrJson: string[] = [];
      const at: string[] = [];
      for (let k = 0; k < n; k++) {
        const i = from + k;
        ids.push(shortId());
        names.push(name(i));
        // auth stores role attributes de-duplicated and sorted (assertRoleAttributes).
        attrJson.push(JSON.stringify([...new Set(attrs(i))].sort()));
        at.push(new Date().toISOString());
      }
      await db.query('begin');
      try {
        await db.query(insertIdentities, [ids, names, attrJson, at, templateId]);
        const positions = (
          await db.query<{ position: string }>(insertOutbox, [
            n,
            ids,
            names,
            attrJson,
            at,
            template.subject,
            template.type,
            template.version,
            JSON.stringify(template.payload),
          ])
        ).rows.map((r) => Number(r.position));
        await db.query('commit');
        first = Math.min(first, ...positions);
        last = Math.max(last, ...positions);
      } catch (err) {
        await db.query('rollback').catch(() => undefined);
        throw err;
      }
    }
    await db.query('analyze identities');
    return {
      seeded: count,
      seconds: +((performance.now() - started) / 1000).toFixed(2),
      templateId,
      outboxPositions: { first, last },
    };
  } finally {
    await db.end();
  }
}

/**
 * Waits until policy applied auth's events up to auth's last position (policy's event cursors for
 * the source `auth`). Gives up at `deadlineMs`, or when the cursors did not move for `stallMs`.
 */
export async function waitForPolicyCatchUp(
  cluster: LocalCluster,
  deadlineMs: number,
  stallMs = 60_000,
): Promise<{ caughtUp: boolean; seconds: number; target: number; watermark: number; gaveUp?: string }> {
  const started = performance.now();
  const auth = new pg.Client({ connectionString: cluster.databases.auth });
  const policy = new pg.Client({ connectionString: cluster.databases.policy });
  await auth.connect();
  await policy.connect();
  const seconds = () => +((performance.now() - started) / 1000).toFixed(2);
  try {
    const target = Number((await auth.query('select last from event_position where id = 1')).rows[0].last);
    let watermark = -1;
    let movedAt = performance.now();
    for (;;) {
      const rows = (
        await policy.query<{ watermark: string }>(`select watermark from event_cursors where source = 'auth'`)
      ).rows;
      const w = rows.length > 0 ? Math.min(...rows.map((r) => Number(r.watermark))) : 0;
      if (w >= target) return { caughtUp: true, seconds: seconds(), target, watermark: w };
      if (w !== watermark) {
        watermark = w;
        movedAt = performance.now();
      }
      if (performance.now() - started > deadlineMs)
        return { caughtUp: false, seconds: seconds(), target, watermark, gaveUp: 'deadline' };
      if (performance.now() - movedAt > stallMs)
        return {
          caughtUp: false,
          seconds: seconds(),
          target,
          watermark,
          gaveUp: `no progress for ${stallMs / 1000} s`,
        };
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    await auth.end();
    await policy.end();
  }
}
