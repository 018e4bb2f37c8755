/**
 * `npm run bench -- lists` (issue 13 g): management `GET /identities` over `BENCH_LIST_IDENTITIES`
 * (100,000) identities with the filters clients send, each beside the equivalent hand-written
 * indexed SQL on auth's database in the same run; p50/p99 of `BENCH_LIST_ROUNDS` (100) sequential
 * requests each (after 5 warm-up rounds).
 *
 * The identities: `BENCH_LIST_API_IDENTITIES` (300) are created through the API (16 in flight), the
 * rest are SEEDED STRAIGHT INTO AUTH'S TABLES (bench/seed.ts: rows copied from an API-created
 * template, with the outbox events auth writes), because the API creates ~100/s here. Identity i is
 * `bench-list-<i, 6 digits>` with role attributes `a<i mod 100>` and `g<i mod 7>`.
 *
 * The floor: a copy of auth's identities table (`bench_floor_identities`, in auth's database,
 * dropped at the end) with the indexes a hand-written query would use (unique name, name and id
 * in "C" order, trigram GIN on name, GIN on role_attributes); each query is the page (same order,
 * limit and offset as the API's) and the count, prepared, run concurrently on two connections like
 * auth's list. The API's totalCount must equal the floor's count. The plans of auth's own queries
 * on its own table (EXPLAIN ANALYZE) are recorded to show where the time goes.
 */
import pg from 'pg';
import { buildListQuery } from '@ziti/zitiql';
import { identityQuery } from '../services/auth/src/shared/query-entities.store.ts';
import {
  type ScenarioOptions,
  adminLogin,
  call,
  clusterRss,
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

const floorTable = 'bench_floor_identities';

interface ListCase {
  name: string;
  /** Query string of the management list. */
  query: string;
  /** ZitiQL filter (for the plan of auth's own SQL). */
  filter?: string;
  roleAttribute?: string;
  floorPage: string;
  floorCount: string;
  floorParams: unknown[];
  floorCountParams: unknown[];
}

export const listName = (i: number) => `bench-list-${String(i).padStart(6, '0')}`;
export const listAttrs = (i: number) => [`a${i % 100}`, `g${i % 7}`];

function cases(count: number): ListCase[] {
  const eq = listName(Math.floor(count / 2));
  const needle = '01234';
  const prefix = 'bench-list-0999';
  const upper = 'bench-list-099:'; // ':' follows '9': [prefix, upper) is every name starting with prefix
  const skip = Math.min(50_000, Math.floor(count / 2));
  const escLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);
  const byId = `order by id collate "C" limit 10`;
  return [
    {
      name: `filter=name="${eq}"`,
      query: `filter=${encodeURIComponent(`name="${eq}"`)}`,
      filter: `name="${eq}"`,
      floorPage: `select * from ${floorTable} where name = $1 ${byId}`,
      floorCount: `select count(*)::int as count from ${floorTable} where name = $1`,
      floorParams: [eq],
      floorCountParams: [eq],
    },
    {
      name: `filter=name contains "${needle}"`,
      query: `filter=${encodeURIComponent(`name contains "${needle}"`)}`,
      filter: `name contains "${needle}"`,
      floorPage: `select * from ${floorTable} where name like $1 ${byId}`,
      floorCount: `select count(*)::int as count from ${floorTable} where name like $1`,
      floorParams: [`%${escLike(needle)}%`],
      floorCountParams: [`%${escLike(needle)}%`],
    },
    {
      // ZitiQL has no startsWith: the prefix is the half-open range [prefix, prefix with its last character + 1).
      name: `startsWith "${prefix}" (filter=name >= "${prefix}" and name < "${upper}")`,
      query: `filter=${encodeURIComponent(`name >= "${prefix}" and name < "${upper}"`)}`,
      filter: `name >= "${prefix}" and name < "${upper}"`,
      floorPage: `select * from ${floorTable} where (name collate "C") >= $1 and (name collate "C") < $2 ${byId}`,
      floorCount: `select count(*)::int as count from ${floorTable} where (name collate "C") >= $1 and (name collate "C") < $2`,
      floorParams: [prefix, upper],
      floorCountParams: [prefix, upper],
    },
    {
      name: 'filter=anyOf(roleAttributes)="a7"',
      query: `filter=${encodeURIComponent('anyOf(roleAttributes)="a7"')}`,
      filter: 'anyOf(roleAttributes)="a7"',
      floorPage: `select * from ${floorTable} where role_attributes @> array[$1]::text[] ${byId}`,
      floorCount: `select count(*)::int as count from ${floorTable} where role_attributes @> array[$1]::text[]`,
      floorParams: ['a7'],
      floorCountParams: ['a7'],
    },
    {
      name: `filter=isAdmin=false sort by name skip ${skip} limit 100`,
      query: `filter=${encodeURIComponent(`isAdmin=false sort by name skip ${skip} limit 100`)}`,
      filter: `isAdmin=false sort by name skip ${skip} limit 100`,
      floorPage: `select * from ${floorTable} where not is_admin order by name collate "C", id collate "C" limit 100 offset $1`,
      floorCount: `select count(*)::int as count from ${floorTable} where not is_admin`,
      floorParams: [skip],
      floorCountParams: [],
    },
    {
      name: 'roleFilter=#a7 (AnyOf)',
      query: `roleFilter=${encodeURIComponent('#a7')}&roleSemantic=AnyOf`,
      roleAttribute: 'a7',
      floorPage: `select * from ${floorTable} where role_attributes && array[$1]::text[] ${byId}`,
      floorCount: `select count(*)::int as count from ${floorTable} where role_attributes && array[$1]::text[]`,
      floorParams: ['a7'],
      floorCountParams: ['a7'],
    },
  ];
}

/** auth's own page and count SQL for a case (as packages/platform's listRows builds it). */
function productSql(c: ListCase): { page: string; count: string; params: unknown[]; pageParams: unknown[] } {
  if (c.roleAttribute) {
    const list = buildListQuery(identityQuery, {}, { paramOffset: 1 });
    const from = `from identities i where (i.role_attributes && $1::text[]) and (${list.where})`;
    return {
      page: `select i.* ${from} order by ${list.orderBy} limit $${2 + list.params.length}`,
      count: `select count(*)::int as count ${from}`,
      params: [[c.roleAttribute], ...list.params],
      pageParams: [[c.roleAttribute], ...list.params, list.limit],
    };
  }
  const list = buildListQuery(identityQuery, { filter: c.filter });
  const from = `from identities i where (${list.where})`;
  const pageParams: unknown[] = [...list.params];
  let page = `select i.* ${from} order by ${list.orderBy}`;
  if (list.limit !== null) {
    pageParams.push(list.limit);
    page += ` limit $${pageParams.length}`;
  }
  if (list.offset > 0) {
    pageParams.push(list.offset);
    page += ` offset $${pageParams.length}`;
  }
  return { page, count: `select count(*)::int as count ${from}`, params: list.params, pageParams };
}

export async function benchLists(
  options: ScenarioOptions & {
    identities?: number;
    apiIdentities?: number;
    rounds?: number;
    catchUpSeconds?: number;
  } = {},
) {
  const total = options.identities ?? Number(process.env.BENCH_LIST_IDENTITIES ?? 100_000);
  const apiCount = Math.min(total, options.apiIdentities ?? Number(process.env.BENCH_LIST_API_IDENTITIES ?? 300));
  const rounds = options.rounds ?? Number(process.env.BENCH_LIST_ROUNDS ?? 100);
  const catchUpMs = (options.catchUpSeconds ?? Number(process.env.BENCH_LIST_CATCHUP_S ?? 300)) * 1000;
  return withCluster(options.cluster, 'lists', {}, async (cluster) => {
    const admin = await adminLogin(cluster);
    const loadAverage1m: Record<string, number> = { start: load1() };

    // A few hundred through the API, so the list paths see rows auth wrote itself.
    const apiRun = await pool(apiCount, 16, async (k) => {
      const i = total - apiCount + k; // the last apiCount indices
      const r = await call(cluster, 'management', 'POST', '/identities', admin, {
        name: listName(i),
        type: 'User',
        isAdmin: false,
        roleAttributes: listAttrs(i),
      });
      if (r.status !== 201) throw new Error(`POST /identities: ${r.status} ${JSON.stringify(r.json)}`);
      return true;
    });
    if (apiRun.errors > 0) throw new Error(`creating identities through the API: ${apiRun.firstError}`);
    console.log(`created ${apiCount} identities through the API in ${apiRun.seconds.toFixed(1)} s`);
    const seedCount = total - apiCount;
    const seed = await seedIdentities(
      cluster,
      admin,
      seedCount,
      listName,
      listAttrs,
      `bench-list-template-${Date.now().toString(36)}`,
    );
    console.log(
      `SEEDED ${seedCount} identities straight into auth's tables (identities + identity.created outbox rows, copied from an API-created template) in ${seed.seconds} s`,
    );
    const catchUp = await waitForPolicyCatchUp(cluster, catchUpMs, Math.min(60_000, catchUpMs));
    // auth answers the identity list alone (pki-enrollment for pending enrollments): a policy still
    // applying (or retrying) the seeded events would only load the machine, so it is stopped then.
    const policyStopped = !catchUp.caughtUp;
    if (policyStopped) await cluster.stopService('policy');
    console.log(
      catchUp.caughtUp
        ? `policy applied every identity.created event ${catchUp.seconds} s after the seeding`
        : `policy had applied auth's events only up to position ${catchUp.watermark} of ${catchUp.target} after ${catchUp.seconds} s (${catchUp.gaveUp}): policy is STOPPED during the measurement`,
    );

    const db = new pg.Pool({ connectionString: cluster.databases.auth, max: 2 });
    try {
      await db.query(`drop table if exists ${floorTable}`);
      await db.query(`create extension if not exists pg_trgm`);
      await db.query(`create table ${floorTable} as select * from identities`);
      await db.query(`alter table ${floorTable} add primary key (id)`);
      await db.query(`create unique index on ${floorTable} (name)`);
      await db.query(`create index on ${floorTable} ((name collate "C"), (id collate "C"))`);
      await db.query(`create index on ${floorTable} ((id collate "C"))`);
      await db.query(`create index on ${floorTable} using gin (name gin_trgm_ops)`);
      await db.query(`create index on ${floorTable} using gin (role_attributes)`);
      await db.query(`analyze ${floorTable}`);
      await db.query(`analyze identities`);
      const authIndexes = (
        await db.query<{ indexdef: string }>(
          `select indexdef from pg_indexes where tablename = 'identities' order by indexname`,
        )
      ).rows.map((r) => r.indexdef);
      const rowCount = Number((await db.query('select count(*) from identities')).rows[0].count);

      const results = [];
      for (const [index, c] of cases(total).entries()) {
        const path = `/identities?${c.query}`;
        let totalCount: number | undefined;
        let pageSize: number | undefined;
        const apiOnce = async () => {
          const r = await call(cluster, 'management', 'GET', path, admin);
          if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
          totalCount = Number(r.json.meta.pagination.totalCount);
          pageSize = (r.json.data as unknown[]).length;
          return true;
        };
        let floorCount: number | undefined;
        let floorPageSize: number | undefined;
        const floorOnce = async () => {
          const [page, count] = await Promise.all([
            db.query({ name: `bench_floor_${index}_page`, text: c.floorPage, values: c.floorParams }),
            db.query({ name: `bench_floor_${index}_count`, text: c.floorCount, values: c.floorCountParams }),
          ]);
          floorPageSize = page.rowCount ?? 0;
          floorCount = Number(count.rows[0].count);
          return true;
        };
        await pool(5, 1, apiOnce);
        await pool(5, 1, floorOnce);
        const load = load1();
        const api = await pool(rounds, 1, apiOnce);
        const floor = await pool(rounds, 1, floorOnce);
        const apiStats = latencyStats(api.latencies);
        const floorStats = latencyStats(floor.latencies);
        // Where the time goes in auth's database: auth's own page and count on its own table.
        const own = productSql(c);
        const plan = async (text: string, values: unknown[]) =>
          (await db.query(`explain (analyze, costs off, timing off, summary on) ${text}`, values)).rows.map(
            (r) => r['QUERY PLAN'] as string,
          );
        const floorPlan = (await db.query(`explain (costs off) ${c.floorPage}`, c.floorParams)).rows.map(
          (r) => r['QUERY PLAN'] as string,
        );
        const r = {
          name: c.name,
          path,
          loadAverage1m: load,
          api: {
            ...apiStats,
            errors: api.errors,
            ...(api.firstError ? { firstError: api.firstError } : {}),
            totalCount,
            pageSize,
          },
          floor: {
            ...floorStats,
            errors: floor.errors,
            ...(floor.firstError ? { firstError: floor.firstError } : {}),
            count: floorCount,
            pageSize: floorPageSize,
            page: c.floorPage,
            countSql: c.floorCount,
          },
          ratioP50: +(apiStats.p50 / floorStats.p50).toFixed(1),
          countsAgree: totalCount === floorCount && pageSize === floorPageSize,
          met: { mustP99Le100ms: apiStats.p99 <= 100, goalP99Le30ms: apiStats.p99 <= 30 },
          authSql: { page: own.page, count: own.count },
          authPagePlan: await plan(own.page, own.pageParams),
          authCountPlan: await plan(own.count, own.params),
          floorPagePlan: floorPlan,
        };
        console.log(
          `${c.name.padEnd(70)} API p50 ${String(r.api.p50).padStart(7)} ms p99 ${String(r.api.p99).padStart(7)} ms | SQL p50 ${String(r.floor.p50).padStart(6)} ms p99 ${String(r.floor.p99).padStart(6)} ms | ×${r.ratioP50} | total ${totalCount}${r.countsAgree ? '' : ` (floor ${floorCount}: DIFFERENT)`} | errors ${api.errors + floor.errors}`,
        );
        results.push(r);
      }
      const rss = clusterRss(cluster);
      const summary = {
        date: new Date().toISOString(),
        scenario: 'lists',
        machine: machine(),
        ...gitState(),
        identities: rowCount,
        requested: total,
        createdThroughApi: apiCount,
        seededWithSql: seedCount,
        seeding:
          "SQL seeding into auth's own tables (bench/seed.ts): identities rows copied column for column from an API-created template, plus an identity.created outbox row each, numbered from event_position like auth's writeOutbox",
        seed,
        apiCreate: { seconds: +apiRun.seconds.toFixed(2), perSecond: Math.round(apiCount / apiRun.seconds) },
        policyCatchUp: catchUp,
        policyStoppedDuringMeasurement: policyStopped,
        rounds,
        loadAverage1m: { ...loadAverage1m, end: load1() },
        authIdentityIndexes: authIndexes,
        results,
        targets: { must: 'p99 ≤ 100 ms each', goal: 'p99 ≤ 30 ms each; contains ≤ 100 ms' },
        rssMiB: rss,
      };
      console.log(`RSS: ${formatRss(rss)}\n`);
      await recordResult('lists', summary, options.record);
      return summary;
    } finally {
      await db.query(`drop table if exists ${floorTable}`).catch(() => undefined);
      await db.end();
      if (policyStopped && options.cluster) await cluster.startService('policy');
    }
  });
}
