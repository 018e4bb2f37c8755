import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError, type IntegrityResult } from '@ziti/contracts';
import { type Database, countSummaryTables, queryRows, snapshotDatabase, snapshotLabel } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/infra.ts';
import { inventoryDatabase } from '../../test/support.ts';
import { DatabaseMaintenance, referenceSummaryFixed } from './database-maintenance.domain.ts';
import type { ServiceMaintenance } from './database-maintenance.ports.ts';
import { PgIntegrityJobStore, PgRateLimitStore } from './maintenance.store.ts';
import { summaryTables } from './maintenance.store.ts';

let database: Database;
let drop: () => Promise<void>;

beforeAll(async () => {
  ({ database, drop } = await inventoryDatabase('postgres'));
});
afterAll(async () => {
  await drop?.();
});

/** A cluster whose integrity checks wait until released. */
class GatedCluster implements ServiceMaintenance {
  readonly services = ['auth', 'policy'];
  private release!: () => void;
  private gate = new Promise<void>((r) => (this.release = r));
  calls: { service: string; fix: boolean }[] = [];
  results: Record<string, IntegrityResult[] | Error> = {
    auth: [{ description: 'a', fixed: false }],
    policy: new Error('policy is down'),
  };

  open() {
    this.release();
  }
  reset() {
    this.gate = new Promise<void>((r) => (this.release = r));
    this.calls = [];
  }
  async summaryCounts(service: string) {
    return { [`${service}Things`]: service.length };
  }
  async integrityCheck(service: string, fix: boolean) {
    this.calls.push({ service, fix });
    await this.gate;
    const r = this.results[service]!;
    if (r instanceof Error) throw r;
    return r;
  }
  async snapshot(service: string, label: string) {
    return `/snapshots/${label}/${service}`;
  }
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (err) {
    return err instanceof ApiError ? err.code : String(err);
  }
}

describe('the data-integrity job across replicas', () => {
  it('runs one job at a time in the cluster, keeps its results, and reports failures of a service', async () => {
    const cluster = new GatedCluster();
    const replica = (owner: string) =>
      new DatabaseMaintenance(new PgIntegrityJobStore(database.db), new PgRateLimitStore(database.db), cluster, {
        owner,
        newLabel: () => 'l',
      });
    const a = replica('a');
    const b = replica('b');
    expect(await a.results()).toMatchObject({ inProgress: false, startTime: null, results: [] });

    await a.startIntegrityJob(false);
    expect(await code(b.startIntegrityJob(true))).toBe('RATE_LIMITED');
    expect(await code(a.startIntegrityJob(true))).toBe('RATE_LIMITED');
    expect(await b.results()).toMatchObject({ inProgress: true, fixingErrors: false });

    cluster.open();
    await a.idle();
    const done = await b.results();
    expect(done).toMatchObject({
      inProgress: false,
      fixingErrors: false,
      tooManyErrors: false,
      results: [{ description: 'auth: a', fixed: false }],
    });
    expect(done.error).toContain('policy: policy is down');
    expect(done.startTime!.getTime()).toBeLessThanOrEqual(done.endTime!.getTime());

    // Once it ended, another replica may run the next one.
    cluster.reset();
    cluster.results.policy = [];
    await b.startIntegrityJob(true);
    expect(cluster.calls[0]).toEqual({ service: 'auth', fix: true });
    cluster.open();
    await b.idle();
    expect(await a.results()).toMatchObject({ inProgress: false, fixingErrors: true, error: null });
  });

  it('a job whose replica died ends with its lease, and another may start', async () => {
    const cluster = new GatedCluster();
    const dying = new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      cluster,
      { owner: 'dying', leaseMs: 300, newLabel: () => 'l' },
    );
    const other = new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      cluster,
      { owner: 'other', newLabel: () => 'l' },
    );
    await dying.startIntegrityJob(false);
    // The dying replica stops renewing its lease (as if its process had gone).
    await queryRows(database.db, `update integrity_job set lease_until = now() - interval '1 second'`);
    expect(await other.results()).toMatchObject({
      inProgress: false,
      error: 'the check was interrupted before it finished',
    });
    await other.startIntegrityJob(false);
    cluster.open();
    await Promise.all([dying.idle(), other.idle()]);
    expect(await other.results()).toMatchObject({ inProgress: false });
  });

  it('caps the results at 1000 and says there were too many', async () => {
    const cluster = new GatedCluster();
    cluster.results = {
      auth: Array.from({ length: 1200 }, (_, i) => ({ description: `d${i}`, fixed: false })),
      policy: [],
    };
    cluster.open();
    const m = new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      cluster,
      { owner: 'x', newLabel: () => 'l' },
    );
    await waitFor(async () => (await code(m.startIntegrityJob(false))) === 'ok', 'a free job slot');
    await m.idle();
    const r = await m.results();
    expect(r.results).toHaveLength(1000);
    expect(r.tooManyErrors).toBe(true);
  });

  it('sums every service’s counts and allows one snapshot a minute across replicas', async () => {
    const cluster = new GatedCluster();
    const a = new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      cluster,
      { owner: 'a', newLabel: () => 'L1' },
    );
    const b = new DatabaseMaintenance(
      new PgIntegrityJobStore(database.db),
      new PgRateLimitStore(database.db),
      cluster,
      { owner: 'b', newLabel: () => 'L2' },
    );
    expect(await a.summary()).toEqual({ authThings: 4, policyThings: 6, ...referenceSummaryFixed });
    expect(await a.snapshot()).toEqual(['/snapshots/L1/auth', '/snapshots/L1/policy']);
    expect(await code(b.snapshot())).toBe('RATE_LIMITED');
    await queryRows(database.db, `update rate_limits set last_at = now() - interval '61 seconds'`);
    expect(await b.snapshot()).toEqual(['/snapshots/L2/auth', '/snapshots/L2/policy']);
  });
});

describe('summary counts and snapshots of a service database', () => {
  it('counts inventory’s tables, edge and transit routers apart', async () => {
    await queryRows(
      database.db,
      `insert into routers (id, kind, name) values ('e1', 'edge', 'sum-e1'), ('t1', 'transit', 'sum-t1'), ('t2', 'transit', 'sum-t2')`,
    );
    const counts = await countSummaryTables(database.db, summaryTables);
    expect(counts).toMatchObject({ routers: 3, edgeRouters: 1, transitRouters: 2, configTypes: 0, services: 0 });
    await expect(countSummaryTables(database.db, { bad: 'x; drop table routers' })).rejects.toThrow(/not a table/);
  });

  for (const kind of ['postgres', 'pglite'] as const) {
    it(`writes a consistent JSON-lines copy of every table (${kind})`, async () => {
      const target =
        kind === 'postgres' ? { database, drop: async () => undefined } : await inventoryDatabase('pglite');
      const dir = mkdtempSync(join(tmpdir(), 'ziti-snap-'));
      try {
        await queryRows(
          target.database.db,
          `insert into config_types (id, name, schema) values ('ct-${kind}', 'snap "quoted" ${kind}', '{"type":"object"}')`,
        );
        const label = snapshotLabel();
        const path = await snapshotDatabase(target.database, dir, 'inventory', label);
        expect(path).toBe(join(dir, label, 'inventory'));
        const files = readdirSync(path);
        expect(files).toEqual(
          expect.arrayContaining([
            'config_types.jsonl',
            'routers.jsonl',
            'schema_migrations.jsonl',
            'outbox.jsonl',
            'manifest.json',
          ]),
        );
        const manifest = JSON.parse(readFileSync(join(path, 'manifest.json'), 'utf8'));
        expect(manifest).toMatchObject({ service: 'inventory', label });
        expect(manifest.migrations).toContain('0001_inventory');
        const lines = readFileSync(join(path, 'config_types.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        expect(lines).toHaveLength(manifest.tables.config_types);
        expect(lines.find((r) => r.id === `ct-${kind}`)).toMatchObject({
          name: `snap "quoted" ${kind}`,
          schema: { type: 'object' },
        });
        expect(statSync(join(path, 'config_types.jsonl')).mode & 0o777).toBe(0o600);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        await target.drop();
      }
      expect(existsSync(dir)).toBe(false);
      // A fresh PGlite database with every migration takes tens of seconds on a loaded two-core machine.
    }, 120_000);
  }
});
