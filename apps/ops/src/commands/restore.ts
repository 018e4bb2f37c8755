import {
  type ConfigError,
  type Migration,
  env as envSpec,
  migrate,
  openDatabase,
  platformMigrations,
  readEnv,
  urlSchemes,
} from '@ziti/platform';
import pg from 'pg';
import type { DatabaseService } from '../cli.ts';
import { connectNats, eventStreamState } from '../nats.ts';
import { type ServiceSnapshot, findSnapshot, tableBatches } from '../snapshot.ts';
import {
  CommandFailure,
  type Io,
  databaseVars,
  describeError,
  migrationsOf,
  plural,
  requireDatabaseUrls,
} from '../support.ts';

/** Tables that hold bookkeeping rather than data: what a database holds once migrated and never used. */
const bookkeeping = new Set(['schema_migrations', 'event_position']);

/** Tables the migrations themselves fill (seed rows): they hold rows in a database nothing used yet. */
function seededTables(migrations: Migration[]): Set<string> {
  const out = new Set(bookkeeping);
  for (const m of migrations)
    for (const match of m.sql.matchAll(/insert\s+into\s+([a-z_][a-z0-9_]*)/gi)) out.add(match[1]!.toLowerCase());
  return out;
}

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, application_name: 'ziti-edge-ops restore' });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

interface Target {
  snapshot: ServiceSnapshot;
  url: string;
  /** The service's own migrations (what `migrate` takes). */
  own: Migration[];
  /** Every migration this build applies to the service's database: the platform's, then its own. */
  build: Migration[];
}

/** How the snapshot's migrations differ from this build's; undefined when they are the same. */
function versionProblem(snapshot: ServiceSnapshot, build: Migration[]): string | undefined {
  const ours = build.map((m) => m.version).sort();
  const theirs = snapshot.migrations;
  const missing = ours.filter((v) => !theirs.includes(v));
  const unknown = theirs.filter((v) => !ours.includes(v));
  if (missing.length === 0 && unknown.length === 0) return undefined;
  const differences = [
    ...(missing.length > 0 ? [`not in the snapshot: ${missing.join(', ')}`] : []),
    ...(unknown.length > 0 ? [`unknown to this build: ${unknown.join(', ')}`] : []),
  ];
  return (
    `${snapshot.service}: the snapshot was taken at another schema version (${differences.join('; ')}): ` +
    'restore it with the build that took it, then upgrade'
  );
}

/** What stands in the way of restoring into a target: data, open connections, a foreign schema. */
async function targetProblems(t: Target): Promise<{ refusals: string[]; overridable: string[] }> {
  const refusals: string[] = [];
  const overridable: string[] = [];
  const service = t.snapshot.service;
  const c = await client(t.url).catch((err: unknown) => {
    throw new CommandFailure([
      `${service}: cannot reach its database (${databaseVars[service]}): ${describeError(err)}`,
    ]);
  });
  try {
    const [{ present }] = (await c.query(`select to_regclass('schema_migrations') is not null as present`)).rows;
    if (present) {
      const applied = (await c.query<{ version: string }>('select version from schema_migrations')).rows.map(
        (r) => r.version,
      );
      const known = new Set(t.build.map((m) => m.version));
      const foreign = applied.filter((v) => !known.has(v));
      if (foreign.length > 0)
        refusals.push(
          `${service}: its database was migrated by another build (${foreign.join(', ')} unknown to this one)`,
        );
      const seeded = seededTables(t.build);
      const tables = (
        await c.query<{ name: string }>(
          `select tablename as name from pg_tables where schemaname = current_schema() order by tablename collate "C"`,
        )
      ).rows.map((r) => r.name);
      const holding: string[] = [];
      for (const name of tables) {
        if (seeded.has(name)) continue;
        const { rowCount } = await c.query(`select 1 from ${quote(name)} limit 1`);
        if ((rowCount ?? 0) > 0) holding.push(name);
      }
      if (holding.length > 0)
        overridable.push(
          `${service}: its database holds data (${holding.slice(0, 5).join(', ')}${holding.length > 5 ? ', …' : ''}): --force replaces it`,
        );
    }
    const others =
      (
        await c.query<{ others: number }>(
          `select count(*)::int as others from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
        )
      ).rows[0]?.others ?? 0;
    if (others > 0)
      overridable.push(
        `${service}: ${plural(others, 'other connection')} to its database ${others === 1 ? 'is' : 'are'} open (is the service running? stop it first)`,
      );
  } finally {
    await c.end().catch(() => undefined);
  }
  return { refusals, overridable };
}

/** Parents before children: the order in which rows can be inserted under the foreign keys. */
async function loadOrder(c: pg.Client, tables: string[]): Promise<string[]> {
  const edges = (
    await c.query<{ child: string; parent: string }>(
      `select cl.relname as child, pa.relname as parent from pg_constraint k
         join pg_class cl on cl.oid = k.conrelid join pg_class pa on pa.oid = k.confrelid
        where k.contype = 'f' and cl.relnamespace = current_schema()::regnamespace and k.conrelid <> k.confrelid`,
    )
  ).rows;
  const ordered: string[] = [];
  const visiting = new Set<string>();
  const visit = (t: string) => {
    if (ordered.includes(t) || visiting.has(t)) return;
    visiting.add(t);
    for (const e of edges) if (e.child === t && tables.includes(e.parent)) visit(e.parent);
    visiting.delete(t);
    ordered.push(t);
  };
  for (const t of [...tables].sort()) visit(t);
  return ordered;
}

/**
 * Loads one service's snapshot in one transaction: every table emptied, the snapshot's rows
 * inserted in foreign-key order (generated columns left to the database), the sequences moved past
 * the rows, and every event consumer's cursor reset so its read models rebuild from their owners at
 * the next start (docs/adr/0008). Answers the rows loaded.
 */
async function load(t: Target): Promise<{ tables: number; rows: number }> {
  const c = await client(t.url);
  const service = t.snapshot.service;
  try {
    await c.query('begin');
    const tables = (
      await c.query<{ name: string }>(`select tablename as name from pg_tables where schemaname = current_schema()`)
    ).rows
      .map((r) => r.name)
      .filter((n) => n !== 'schema_migrations');
    const absent = Object.keys(t.snapshot.tables).filter((n) => n !== 'schema_migrations' && !tables.includes(n));
    if (absent.length > 0)
      throw new CommandFailure([`${service}: the snapshot has tables its database has not: ${absent.join(', ')}`]);
    if (tables.length > 0) await c.query(`truncate table ${tables.map(quote).join(', ')}`);
    let rows = 0;
    for (const table of await loadOrder(c, tables)) {
      const expected = t.snapshot.tables[table];
      if (expected === undefined) continue; // a table the snapshot's manifest does not list stays empty
      const columns = (
        await c.query<{ name: string }>(
          `select attname as name from pg_attribute
            where attrelid = $1::regclass and attnum > 0 and not attisdropped and attgenerated = ''
            order by attnum`,
          [quote(table)],
        )
      ).rows.map((r) => quote(r.name));
      let loaded = 0;
      for await (const batch of tableBatches(t.snapshot, table)) {
        await c.query(
          `insert into ${quote(table)} (${columns.join(', ')}) overriding system value
           select ${columns.join(', ')} from json_populate_recordset(null::${quote(table)}, $1::json)`,
          [batch.json],
        );
        loaded += batch.count;
      }
      if (loaded !== expected)
        throw new CommandFailure([
          `${service}: ${table}.jsonl holds ${plural(loaded, 'row')}, its manifest says ${expected}: the snapshot is incomplete`,
        ]);
      rows += loaded;
    }
    // Sequences continue after the restored rows (the outbox's ids, for one).
    const sequences = (
      await c.query<{ seq: string; tbl: string; col: string }>(
        `select s.oid::regclass::text as seq, t.relname as tbl, a.attname as col
           from pg_class s
           join pg_depend d on d.objid = s.oid and d.classid = 'pg_class'::regclass and d.refclassid = 'pg_class'::regclass
           join pg_class t on t.oid = d.refobjid
           join pg_attribute a on a.attrelid = t.oid and a.attnum = d.refobjsubid
          where s.relkind = 'S' and t.relnamespace = current_schema()::regnamespace`,
      )
    ).rows;
    for (const s of sequences)
      await c.query(
        `select setval($1::regclass, coalesce((select max(${quote(s.col)}) from ${quote(s.tbl)}), 1),
                       (select max(${quote(s.col)}) from ${quote(s.tbl)}) is not null)`,
        [s.seq],
      );
    // Consumers start over from their owners' state: nothing of the old event stream is assumed.
    if (tables.includes('event_cursors'))
      await c.query(
        `update event_cursors set watermark = 0, applied = '{}', gap_since = null, resync_required = true,
                resync_position = null, resynced_at = null, updated_at = now()`,
      );
    await c.query('commit');
    return { tables: Object.keys(t.snapshot.tables).length, rows };
  } catch (err) {
    await c.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * Restores what `POST /database/snapshot` wrote into each service's database. Everything is
 * checked before anything changes: the snapshot's files, its schema version against this build's,
 * the targets (empty and unused, unless `--force`), the event stream (new, unless `--force`). Then
 * each target is migrated to this build's schema and loaded in one transaction.
 */
export async function restore(options: { snapshot: string; force: boolean }, io: Io): Promise<number> {
  const found = findSnapshot(options.snapshot);
  if ('problems' in found) throw new CommandFailure(found.problems);
  const services = found.snapshots.map((s) => s.service);
  requireDatabaseUrls(services, io.env);
  const targets: Target[] = [];
  const refusals: string[] = [];
  for (const snapshot of found.snapshots) {
    const own = await migrationsOf(snapshot.service);
    const build = [...platformMigrations, ...own];
    const problem = versionProblem(snapshot, build);
    if (problem) refusals.push(problem);
    targets.push({ snapshot, url: io.env[databaseVars[snapshot.service]]!, own, build });
  }
  const overridable: string[] = [];
  for (const found of [...(await Promise.all(targets.map(targetProblems))), await streamProblems(io)]) {
    refusals.push(...found.refusals);
    overridable.push(...found.overridable);
  }
  if (refusals.length > 0 || (overridable.length > 0 && !options.force)) {
    const reasons = [...refusals, ...(options.force ? [] : overridable)];
    throw new CommandFailure(['nothing was restored:', ...reasons.map((r) => `  ${r}`)]);
  }
  for (const line of overridable) io.err(`--force: ${line}`);
  const label = found.snapshots[0]!.label;
  const missing = (['auth', 'pki-enrollment', 'policy', 'inventory', 'audit'] as DatabaseService[]).filter(
    (s) => !services.includes(s),
  );
  for (const t of targets) {
    const database = await openDatabase({ url: t.url, poolSize: 1 });
    try {
      await migrate(database, t.own);
    } finally {
      await database.close();
    }
    const loaded = await load(t);
    io.out(
      `${t.snapshot.service}: restored ${plural(loaded.rows, 'row')} in ${plural(loaded.tables, 'table')} from ${label} (taken ${t.snapshot.takenAt})`,
    );
  }
  if (missing.length > 0) io.out(`not in the snapshot, left as they are: ${missing.join(', ')}`);
  io.out(
    'start the services (with the ZITI_SECRET_KEY the snapshot was sealed with): their read models rebuild from their owners at start',
  );
  return 0;
}

/** The event stream must not hold an earlier history the restored positions would collide with. */
async function streamProblems(io: Io): Promise<{ refusals: string[]; overridable: string[] }> {
  let nats: { NATS_URL: string | undefined; ZITI_BUS_NAMESPACE: string };
  try {
    nats = readEnv(
      {
        NATS_URL: (v, n) => (v === undefined ? undefined : envSpec.url(urlSchemes.nats)(v, n)),
        ZITI_BUS_NAMESPACE: envSpec.token(''),
      },
      io.env,
    );
  } catch (err) {
    return { refusals: (err as ConfigError).problems ?? [(err as Error).message], overridable: [] };
  }
  if (!nats.NATS_URL) {
    io.err(
      'note: NATS_URL is not set, so the event stream was not checked: restore into a new one (a new ZITI_BUS_NAMESPACE or NATS)',
    );
    return { refusals: [], overridable: [] };
  }
  let nc;
  try {
    nc = await connectNats(nats.NATS_URL);
  } catch (err) {
    return { refusals: [], overridable: [`NATS cannot be reached to check the event stream: ${describeError(err)}`] };
  }
  try {
    const state = await eventStreamState(nc, nats.ZITI_BUS_NAMESPACE);
    if (state.exists && state.messages > 0)
      return {
        refusals: [],
        overridable: [
          `the event stream ${state.name} holds ${plural(state.messages, 'event')} of the cluster's earlier history, ` +
            'which the restored event positions would collide with: restore into a new stream (a new ' +
            `ZITI_BUS_NAMESPACE, or remove it with the services stopped: nats stream rm ${state.name})`,
        ],
      };
    return { refusals: [], overridable: [] };
  } catch (err) {
    return { refusals: [], overridable: [`the event stream could not be checked: ${describeError(err)}`] };
  } finally {
    await nc.close().catch(() => undefined);
  }
}
