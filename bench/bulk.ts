/**
 * `npm run bench -- bulk` (issue 13 d): `BENCH_BULK_IDENTITIES` (10,000) identities created with
 * `POST /edge/management/v1/identities` at 16 requests in flight into a network that already has as
 * many (`BENCH_BULK_EXISTING`, default the same). The existing ones are created the same way through
 * the API (`BENCH_BULK_PRESEED=api`, default) or seeded into auth's tables (`sql`, bench/seed.ts).
 * Records the total time, the time of each `BENCH_BULK_CHUNK` (1,000) completions and the last ÷
 * first chunk ratio, p50/p99 and errors; the floor, same run: the same writes auth makes per create
 * (one identities row + one outbox row numbered from a position row, one transaction each) at 16
 * connections straight on Postgres, into scratch copies of auth's tables (`create table … (like …
 * including all)`, same indexes) holding as many rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { shortId } from '@ziti/platform';
import {
  type ScenarioOptions,
  adminLogin,
  call,
  clusterRss,
  cpuBetween,
  cpuSnapshot,
  formatCpu,
  formatRss,
  gitState,
  latencyStats,
  load1,
  machine,
  pool,
  recordResult,
  withCluster,
} from './common.ts';
import { seedIdentities, waitForPolicyCatchUp } from './seed.ts';

const name = (tag: string, i: number) => `bench-bulk-${tag}-${String(i).padStart(6, '0')}`;
const attrs = (i: number) => [`b${i % 50}`];

/** Seconds of each chunk of `size` completions (completion times in ms, ascending). */
function chunkSeconds(completions: number[], size: number): number[] {
  const out: number[] = [];
  for (let end = size; end <= completions.length; end += size)
    out.push(+((completions[end - 1]! - (end - size > 0 ? completions[end - size - 1]! : 0)) / 1000).toFixed(2));
  return out;
}

export async function benchBulk(
  options: ScenarioOptions & { identities?: number; existing?: number; chunk?: number; preseed?: 'api' | 'sql' } = {},
) {
  const count = options.identities ?? Number(process.env.BENCH_BULK_IDENTITIES ?? 10_000);
  const existing = options.existing ?? Number(process.env.BENCH_BULK_EXISTING ?? count);
  const chunk = options.chunk ?? Number(process.env.BENCH_BULK_CHUNK ?? 1_000);
  const preseed = options.preseed ?? ((process.env.BENCH_BULK_PRESEED ?? 'api') as 'api' | 'sql');
  const connections = 16;
  return withCluster(options.cluster, 'bulk', {}, async (cluster) => {
    const admin = await adminLogin(cluster);
    const tag = randomBytes(3).toString('hex');
    const loadAverage1m: Record<string, number> = { preseed: load1() };
    const createOne = async (i: number) => {
      const r = await call(cluster, 'management', 'POST', '/identities', admin, {
        name: name(tag, i),
        type: 'User',
        isAdmin: false,
        roleAttributes: attrs(i),
      });
      if (r.status !== 201) throw new Error(`POST /identities: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
      return true;
    };

    // The network that already has `existing` identities.
    let preseedResult: Record<string, unknown>;
    if (preseed === 'sql') {
      const s = await seedIdentities(
        cluster,
        admin,
        existing,
        (i) => name(tag, i),
        attrs,
        `bench-bulk-template-${tag}`,
      );
      const catchUp = await waitForPolicyCatchUp(cluster, 300_000);
      preseedResult = {
        how: 'SQL seeding into auth tables (bench/seed.ts)',
        ...s,
        policyCatchUp: catchUp,
      };
    } else {
      const r = await pool(existing, connections, createOne);
      if (r.errors > 0) throw new Error(`pre-creating identities: ${r.firstError}`);
      preseedResult = {
        how: 'through the API, 16 in flight',
        seconds: +r.seconds.toFixed(2),
        perSecond: Math.round(existing / r.seconds),
        ...latencyStats(r.latencies),
        chunkSeconds: chunkSeconds(r.completions, chunk),
      };
    }
    console.log(`network has ${existing} identities (${preseed}): ${JSON.stringify(preseedResult)}`);

    // The measured run.
    loadAverage1m.run = load1();
    const cpuBefore = cpuSnapshot(cluster);
    const run = await pool(count, connections, (k) => createOne(existing + k));
    const cpu = cpuBetween(cpuBefore, cpuSnapshot(cluster), count);
    console.log(`CPU during the run: ${formatCpu(cpu)}`);
    loadAverage1m.afterRun = load1();
    const chunks = chunkSeconds(run.completions, chunk);
    const stats = latencyStats(run.latencies);
    const firstLast = chunks.length > 0 ? +(chunks.at(-1)! / chunks[0]!).toFixed(2) : Number.NaN;
    const api = {
      name: `POST /identities ×${count}, ${connections} in flight`,
      seconds: +run.seconds.toFixed(2),
      perSecond: Math.round(count / run.seconds),
      ...stats,
      errors: run.errors,
      ...(run.firstError ? { firstError: run.firstError } : {}),
      chunkSize: chunk,
      chunkSeconds: chunks,
      lastVsFirstChunk: firstLast,
    };
    console.log(
      `${api.name}: ${api.seconds} s (${api.perSecond}/s) p50 ${api.p50} ms p99 ${api.p99} ms errors ${api.errors}; per ${chunk}: ${chunks.join(', ')} s; last ÷ first ${firstLast}`,
    );
    const total = Number(
      (await call(cluster, 'management', 'GET', '/identities?limit=1', admin)).json.meta.pagination.totalCount,
    );

    // Floor: the same rows, straight on Postgres, into scratch copies of auth's tables.
    const db = new pg.Pool({ connectionString: cluster.databases.auth, max: connections });
    const ft = `bench_floor_bulk_${tag}`;
    let floor;
    try {
      await db.query(`create table ${ft}_identities (like identities including all)`);
      await db.query(`create table ${ft}_outbox (like outbox including all)`);
      await db.query(`create table ${ft}_position (id integer primary key, last bigint not null)`);
      await db.query(`insert into ${ft}_position values (1, 0)`);
      // As many rows as the API run started with.
      await db.query(`insert into ${ft}_identities select * from identities order by created_at limit $1`, [
        existing + 1,
      ]);
      const template = (await db.query(`select * from identities where name = $1`, [name(tag, 0)])).rows[0];
      const columns = Object.keys(template);
      // The event auth wrote for the template, as audit applied it (auth's outbox drops published rows).
      const audit = new pg.Client({ connectionString: cluster.databases.audit });
      await audit.connect();
      const payload = await audit
        .query(`select state from entity_states where entity_type = 'identities' and id = $1`, [template.id])
        .then((r) => r.rows[0]?.state ?? {})
        .finally(() => audit.end());
      loadAverage1m.floor = load1();
      const f = await pool(count, connections, async (k) => {
        const c = await db.connect();
        try {
          const id = shortId();
          const n = `floor-${tag}-${k}`;
          const at = new Date();
          const row = { ...template, id, name: n, role_attributes: attrs(k), created_at: at, updated_at: at };
          await c.query('begin');
          await c.query(
            `insert into ${ft}_identities (${columns.map((x) => `"${x}"`).join(', ')}) values (${columns.map((_, j) => `$${j + 1}`).join(', ')})`,
            columns.map((x) => {
              const v = row[x];
              return v !== null && typeof v === 'object' && !(v instanceof Date) && !Array.isArray(v)
                ? JSON.stringify(v)
                : v;
            }),
          );
          await c.query(
            `with p as (update ${ft}_position set last = last + 1 where id = 1 returning last)
             insert into ${ft}_outbox (position, subject, type, version, payload)
             select p.last, 'auth.identity.created', 'identity.created', 1, $1::jsonb from p`,
            [JSON.stringify({ ...payload, id, name: n, roleAttributes: attrs(k), createdAt: at, updatedAt: at })],
          );
          await c.query('commit');
          return true;
        } catch (err) {
          await c.query('rollback').catch(() => undefined);
          throw err;
        } finally {
          c.release();
        }
      });
      floor = {
        name: `floor: identity + outbox row per transaction, ${connections} connections (pg)`,
        seconds: +f.seconds.toFixed(2),
        perSecond: Math.round(count / f.seconds),
        ...latencyStats(f.latencies),
        errors: f.errors,
        ...(f.firstError ? { firstError: f.firstError } : {}),
        chunkSeconds: chunkSeconds(f.completions, chunk),
      };
      console.log(
        `${floor.name}: ${floor.seconds} s (${floor.perSecond}/s) p50 ${floor.p50} ms p99 ${floor.p99} ms errors ${floor.errors}`,
      );
    } finally {
      for (const t of ['identities', 'outbox', 'position'])
        await db.query(`drop table if exists ${ft}_${t}`).catch(() => undefined);
      await db.end();
    }

    const rss = clusterRss(cluster);
    const summary = {
      date: new Date().toISOString(),
      scenario: 'bulk',
      machine: machine(),
      ...gitState(),
      existing,
      created: count,
      identitiesAfter: total,
      connections,
      loadAverage1m,
      preseed: preseedResult,
      api,
      floor,
      cpuDuringRun: cpu,
      ratios: { apiVsFloorThroughput: +(api.perSecond / floor.perSecond).toFixed(3), lastVsFirstChunk: firstLast },
      targets: { must: '10,000 in ≤ 60 s; last thousand ≤ 1.5× the first', goal: '≤ 30 s, flat' },
      met: {
        mustTime: api.seconds <= 60 * (count / 10_000),
        mustFlat: firstLast <= 1.5,
        goalTime: api.seconds <= 30 * (count / 10_000),
      },
      rssMiB: rss,
    };
    console.log(`RSS: ${formatRss(rss)}\n`);
    await recordResult('bulk', summary, options.record);
    return summary;
  });
}
