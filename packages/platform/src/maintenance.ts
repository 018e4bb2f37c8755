import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync } from 'node:fs';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import {
  ApiError,
  type EntityStatesReply,
  type EntityStatesRequest,
  type IntegrityResult,
  type EntityOwner,
  maintenanceCallContracts,
} from '@ziti/contracts';
import type { Bus } from './bus/bus.ts';
import type { Database, Db } from './db/database.ts';
import { queryRows } from './db/database.ts';
import { currentEventPosition } from './db/outbox.ts';
import { type CallTable, callHandlers, callService } from './call.ts';

/**
 * A service's answer to one page of `entityStates`, read through `tx`: a read-only REPEATABLE READ
 * transaction in which the platform also reads the owner's event position, so the page is exactly
 * the state after that position (docs/adr/0008).
 */
export type EntityStatesSource = (request: EntityStatesRequest, tx: Db) => Promise<Record<string, unknown>[]>;

export interface MaintenanceOptions {
  /** The service name, used in snapshot paths. */
  service: string;
  database: Database;
  /**
   * Entity type (the reference's store name, e.g. `identities`) → what to count: a table name,
   * optionally followed by a `where` clause written in code (never from input).
   */
  summaryTables: Record<string, string>;
  /** Counts `/summary` reports of what the service keeps outside Postgres (auth: live API sessions in Redis). */
  summaryCounts?: () => Promise<Record<string, number>>;
  /** The service's own checks: its data and its read models against their owners. */
  integrity?: (fix: boolean) => Promise<IntegrityResult[]>;
  /** Entity types this service owns and publishes states of. */
  entityStates?: Partial<Record<EntityStatesRequest['type'], EntityStatesSource>>;
  /** Where snapshots are written (default: `snapshotDirFromEnv()`). */
  snapshotDir?: string;
}

const countable = /^[a-z_][a-z0-9_]*( where [^;]+)?$/;

/** Counts the rows behind each summary entry; the entries are code, checked once more here. */
export async function countSummaryTables(db: Db, tables: Record<string, string>): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const [entity, source] of Object.entries(tables)) {
    if (!countable.test(source)) throw new Error(`summary source for ${entity} is not a table: ${source}`);
    const rows = await queryRows<{ count: number }>(db, `select count(*)::int as count from ${source}`);
    out[entity] = rows[0]?.count ?? 0;
  }
  return out;
}

/** `ZITI_SNAPSHOT_DIR`, else `<ZITI_DATA_DIR or ./data>/snapshots`. */
export function snapshotDirFromEnv(source: NodeJS.ProcessEnv = process.env): string {
  return resolve(source.ZITI_SNAPSHOT_DIR || join(source.ZITI_DATA_DIR || './data', 'snapshots'));
}

/** A label for one snapshot request: sortable by time, unique. */
export function snapshotLabel(now = new Date()): string {
  return `${now
    .toISOString()
    .replace(/[:]/g, '-')
    .replace(/\.\d+Z$/, 'Z')}-${randomBytes(3).toString('hex')}`;
}

/**
 * A consistent copy of one service's database without pg_dump: one read-only REPEATABLE READ
 * transaction (a single point-in-time view across every table), each table streamed through a
 * cursor as JSON lines (`<table>.jsonl`, one `row_to_json` per line) plus `manifest.json` with
 * the row counts and the applied migrations. The same code runs on Postgres and PGlite, the
 * files are readable without a Postgres of the same version, and they are written 0600 in a
 * 0700 directory because they hold password hashes and encrypted keys.
 */
export async function snapshotDatabase(
  database: Database,
  dir: string,
  service: string,
  label: string,
): Promise<string> {
  const target = join(dir, label, service);
  mkdirSync(target, { recursive: true, mode: 0o700 });
  const manifest = await database.transaction(async (tx) => {
    await queryRows(tx, 'set transaction isolation level repeatable read, read only');
    const tables = await queryRows<{ name: string }>(
      tx,
      `select tablename as name from pg_tables where schemaname = current_schema() order by tablename collate "C"`,
    );
    const counts: Record<string, number> = {};
    for (const { name } of tables) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) continue;
      const out = createWriteStream(join(target, `${name}.jsonl`), { mode: 0o600 });
      let rows = 0;
      await queryRows(
        tx,
        `declare snapshot_rows no scroll cursor for select row_to_json(t)::text as line from "${name}" t`,
      );
      try {
        for (;;) {
          const batch = await queryRows<{ line: string }>(tx, 'fetch forward 500 from snapshot_rows');
          if (batch.length === 0) break;
          rows += batch.length;
          if (!out.write(`${batch.map((b) => b.line).join('\n')}\n`)) await once(out, 'drain');
        }
      } finally {
        await queryRows(tx, 'close snapshot_rows');
        out.end();
        await once(out, 'close');
      }
      counts[name] = rows;
    }
    const migrations =
      counts.schema_migrations === undefined
        ? []
        : await queryRows<{ version: string }>(tx, 'select version from schema_migrations order by version');
    return {
      service,
      label,
      takenAt: new Date().toISOString(),
      tables: counts,
      migrations: migrations.map((m) => m.version),
    };
  });
  const file = createWriteStream(join(target, 'manifest.json'), { mode: 0o600 });
  file.end(`${JSON.stringify(manifest, null, 2)}\n`);
  await once(file, 'close');
  return target;
}

/** What a service's maintenance calls answer (see `maintenanceCallContracts`), one method per call. */
export interface ServiceMaintenance {
  summaryCounts(): Promise<Record<string, number>>;
  integrityCheck(fix: boolean): Promise<IntegrityResult[]>;
  /** Writes a snapshot of the service's database under `label`; answers its path. */
  snapshot(label: string): Promise<string>;
  eventPosition(): Promise<number>;
  entityStates(request: EntityStatesRequest): Promise<EntityStatesReply>;
}

/**
 * The maintenance calls a service serves (see `maintenanceCallContracts`): summary counts, its
 * integrity check, a snapshot of its database, and the states of the entities it owns, each
 * answered by `maintenance` (usually `databaseMaintenance`, built in the service's composition root).
 */
export function maintenanceHandlers(maintenance: ServiceMaintenance): CallTable {
  return callHandlers(maintenanceCallContracts, {
    summaryCounts: () => maintenance.summaryCounts(),
    integrityCheck: async ({ fix }) => ({ results: await maintenance.integrityCheck(fix) }),
    snapshot: async ({ label }) => ({ path: await maintenance.snapshot(label) }),
    eventPosition: async () => ({ position: await maintenance.eventPosition() }),
    entityStates: (request) => maintenance.entityStates(request),
  });
}

/**
 * A service's maintenance over its database: the rows of `summaryTables` counted, the service's own
 * checks, a snapshot, its event position, and one page of the states it owns read in a read-only
 * REPEATABLE READ transaction together with the event position they are the state after.
 */
export function databaseMaintenance(o: MaintenanceOptions): ServiceMaintenance {
  const dir = o.snapshotDir ?? snapshotDirFromEnv();
  return {
    summaryCounts: async () => ({
      ...(await countSummaryTables(o.database.db, o.summaryTables)),
      ...(o.summaryCounts ? await o.summaryCounts() : {}),
    }),
    integrityCheck: async (fix) => (o.integrity ? o.integrity(fix) : []),
    snapshot: (label) => snapshotDatabase(o.database, dir, o.service, label),
    eventPosition: () => currentEventPosition(o.database.db),
    entityStates: async (request) => {
      const source = o.entityStates?.[request.type];
      if (!source)
        throw new ApiError('NOT_IMPLEMENTED', {
          code: 'NOT_IMPLEMENTED',
          message: `${o.service} does not own ${request.type} states`,
        });
      return o.database.transaction(async (tx) => {
        await queryRows(tx, 'set transaction isolation level repeatable read, read only');
        const position = await currentEventPosition(tx);
        const states = await source(request, tx);
        if (request.ids) return { states, position };
        // A page stays well under the bus's message size whatever the states weigh; `more` says
        // whether another page follows (a short page is not the last one when it was cut here).
        let bytes = 0;
        let kept = 0;
        while (kept < states.length && (kept === 0 || bytes < maxPageBytes))
          bytes += JSON.stringify(states[kept++]).length;
        return {
          states: states.slice(0, kept),
          position,
          more: kept < states.length || states.length === (request.limit ?? 500),
        };
      });
    },
  };
}

/**
 * The SQL condition and parameters selecting one `entityStates` page of a table whose key is
 * `id`: the given ids, or the ids after `after`, ordered bytewise (the same order on every
 * database, so an owner's pages and a read model's rows line up).
 */
export function entityStatesPage(
  request: EntityStatesRequest,
  idColumn = 'id',
): { where: string; params: unknown[]; limit: number } {
  if (request.ids) return { where: `${idColumn} = any($1::text[])`, params: [request.ids], limit: request.ids.length };
  const limit = request.limit ?? 500;
  if (request.after !== undefined) return { where: `${idColumn} collate "C" > $1`, params: [request.after], limit };
  return { where: 'true', params: [], limit };
}

/** The most a page of owner states weighs (JSON), far below NATS's default 1 MB max_payload. */
const maxPageBytes = 256 * 1024;

/** One page of an owner's states: read at `position`, covering the ids in (`after`, `upTo`] (`upTo` absent: to the end). */
export interface OwnerStatesPage {
  states: Record<string, unknown>[];
  position: number;
  after?: string;
  upTo?: string;
}

/**
 * Every state an owner publishes of one entity type, page by page in id order, each page with
 * the owner's event position it was read at: what a read model compares itself with when checking
 * its integrity, and what it is rebuilt from.
 */
export async function* ownerEntityStates(
  bus: Bus,
  owner: EntityOwner,
  type: EntityStatesRequest['type'],
  pageSize = 500,
): AsyncGenerator<OwnerStatesPage> {
  let after: string | undefined;
  for (;;) {
    const reply = await callService(
      bus,
      owner,
      maintenanceCallContracts.entityStates,
      { type, limit: pageSize, ...(after === undefined ? {} : { after }) },
      { timeoutMs: 30_000 },
    );
    const more = (reply.more ?? reply.states.length === pageSize) && reply.states.length > 0;
    const last = more ? String(reply.states[reply.states.length - 1]!.id) : undefined;
    yield {
      states: reply.states,
      position: reply.position,
      ...(after === undefined ? {} : { after }),
      ...(last === undefined ? {} : { upTo: last }),
    };
    if (last === undefined) return;
    after = last;
  }
}

/** The position of an owner's last committed event. */
export async function ownerEventPosition(bus: Bus, owner: EntityOwner): Promise<number> {
  return (await callService(bus, owner, maintenanceCallContracts.eventPosition, {})).position;
}
