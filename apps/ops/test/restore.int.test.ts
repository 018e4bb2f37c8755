import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrations } from '@ziti/policy/app';
import { type Database, migrate, openDatabase, queryRows, snapshotDatabase } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/support/infra.ts';
import { run } from '../src/run.ts';
import type { Io } from '../src/support.ts';

/**
 * `restore` on real Postgres databases, one service's snapshot (policy's: generated columns, a
 * sequence, seeded rows, event cursors): what it refuses, and what it loads.
 */
const drops: (() => Promise<void>)[] = [];
let source: Database;
let snapshotDir: string;

async function database(prefix: string): Promise<{ url: string; db: Database }> {
  const created = await createTestDatabase(prefix);
  drops.push(created.drop);
  const db = await openDatabase({ url: created.url, poolSize: 2 });
  drops.unshift(() => db.close());
  return { url: created.url, db };
}

/** Runs the command; its exit code and lines (the note that NATS was not checked left out). */
async function ops(argv: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: Io = { env, out: (l) => out.push(l), err: (l) => err.push(l), readStdin: async () => '' };
  const code = await run(argv, io);
  return { code, out, err: err.filter((l) => !l.startsWith('note: NATS_URL is not set')) };
}

beforeAll(async () => {
  ({ db: source } = await database('ops_restore_src'));
  await migrate(source, migrations);
  await queryRows(
    source.db,
    `insert into service_policies (id, name, type, semantic, identity_roles, service_roles, posture_check_roles, tags, created_at, updated_at)
     values ('sp1', 'dial-all', 'Dial', 'AnyOf', '{#all}', '{#all}', '{}', '{"k": [1, 2]}', now(), now())`,
  );
  await queryRows(
    source.db,
    `with p as (update event_position set last = last + 2 where id = 1 returning last)
     insert into outbox (position, subject, type, version, payload, published_at)
     select p.last - 2 + g, 'ziti.evt.policy.x', 'x', 1, '{"a": [1]}', case when g = 1 then now() end from p, generate_series(1, 2) g`,
  );
  await queryRows(
    source.db,
    `insert into event_cursors (consumer, source, watermark, applied, resync_required) values ('policy-from-auth', 'auth', 41, '{43,44}', false)`,
  );
  snapshotDir = mkdtempSync(join(tmpdir(), 'ops-restore-'));
  await snapshotDatabase(source, snapshotDir, 'policy', 'label-1');
});

afterAll(async () => {
  for (const drop of drops) await drop().catch(() => undefined);
});

describe('restore', () => {
  it('loads a snapshot into an empty database: rows, sequences, and consumers that start over', async () => {
    const target = await database('ops_restore_dst');
    const result = await ops(['restore', join(snapshotDir, 'label-1')], { POLICY_DATABASE_URL: target.url });
    expect(result.err).toEqual([]);
    expect(result.code).toBe(0);
    expect(result.out[0]).toMatch(/^policy: restored \d+ rows in \d+ tables from label-1/);
    // service_policies has generated columns: the database computes them again, to the same values.
    for (const table of ['outbox', 'service_policies', 'posture_check_types', 'event_position']) {
      const [a, b] = await Promise.all(
        [source, target.db].map((d) =>
          queryRows(d.db, `select row_to_json(t)::text as r from ${table} t order by 1`).then((rows) =>
            rows.map((r) => r.r),
          ),
        ),
      );
      expect(b, table).toEqual(a);
    }
    // The outbox continues after the restored ids; the consumer rebuilds from its owner.
    const [next] = await queryRows<{ id: string }>(target.db.db, `select nextval('outbox_id_seq')::text as id`);
    const [max] = await queryRows<{ id: string }>(source.db, 'select max(id)::text as id from outbox');
    expect(Number(next!.id)).toBe(Number(max!.id) + 1);
    expect(
      await queryRows(target.db.db, 'select watermark::int, applied::text, resync_required from event_cursors'),
    ).toEqual([{ watermark: 0, applied: '{}', resync_required: true }]);
  });

  it('refuses a database that holds data, then replaces it with --force', async () => {
    const target = await database('ops_restore_full');
    await migrate(target.db, migrations);
    await queryRows(target.db.db, `insert into event_cursors (consumer, source) values ('x', 'auth')`);
    const env = { POLICY_DATABASE_URL: target.url };
    // This test's own connection is open: a connection a running service would hold.
    const refused = await ops(['restore', join(snapshotDir, 'label-1', 'policy', 'manifest.json')], env);
    expect(refused.code).toBe(1);
    expect(refused.err).toEqual([
      'restore: nothing was restored:',
      'restore:   policy: its database holds data (event_cursors): --force replaces it',
      'restore:   policy: 1 other connection to its database is open (is the service running? stop it first)',
    ]);
    const forced = await ops(['restore', join(snapshotDir, 'label-1', 'policy'), '--force'], env);
    expect(forced.code).toBe(0);
    expect(await queryRows(target.db.db, 'select consumer from event_cursors')).toEqual([
      { consumer: 'policy-from-auth' },
    ]);
  });

  it('refuses a snapshot of another schema version, even with --force', async () => {
    const dir = join(snapshotDir, 'label-1', 'policy');
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    const other = mkdtempSync(join(tmpdir(), 'ops-restore-old-'));
    for (const table of Object.keys(manifest.tables))
      writeFileSync(join(other, `${table}.jsonl`), readFileSync(join(dir, `${table}.jsonl`)));
    writeFileSync(
      join(other, 'manifest.json'),
      JSON.stringify({ ...manifest, migrations: [...manifest.migrations.slice(0, -1), '9999_from_the_future'] }),
    );
    const target = await database('ops_restore_old');
    const result = await ops(['restore', other, '--force'], { POLICY_DATABASE_URL: target.url });
    expect(result.code).toBe(1);
    const last = manifest.migrations.at(-1);
    expect(result.err).toEqual([
      'restore: nothing was restored:',
      `restore:   policy: the snapshot was taken at another schema version (not in the snapshot: ${last}; ` +
        'unknown to this build: 9999_from_the_future): restore it with the build that took it, then upgrade',
    ]);
    // Nothing changed: the target was not even migrated.
    expect(await queryRows(target.db.db, `select to_regclass('schema_migrations') is null as untouched`)).toEqual([
      { untouched: true },
    ]);
  });

  it('says what is wrong with a snapshot that is not one, and with a missing database URL', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'ops-restore-empty-'));
    expect((await ops(['restore', empty], {})).err).toEqual([
      `restore: ${empty} holds no snapshot: expected <label>/<service>/manifest.json as POST /database/snapshot writes`,
    ]);
    const result = await ops(['restore', join(snapshotDir, 'label-1')], {});
    expect(result.code).toBe(1);
    expect(result.err).toEqual([
      'restore: invalid configuration:',
      '  POLICY_DATABASE_URL is required (a postgres: or postgresql: URL)',
    ]);
  });
});
