import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrations as auditMigrations } from '@ziti/audit/app';
import { migrations as authMigrations } from '@ziti/auth/app';
import { migrations as inventoryMigrations } from '@ziti/inventory/app';
import { migrations as pkiMigrations } from '@ziti/pki-enrollment/app';
import { type Database, openDatabase, queryRows, sharedPgliteArtifacts } from '@ziti/platform/db/database';
import { migrate, platformMigrations } from '@ziti/platform/db/migrations';
import { migrations as policyMigrations } from '@ziti/policy/app';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type EmbeddedDatabase,
  embeddedDatabases,
  ensureReadyCopy,
  ensureServiceTemplate,
  seedDatabase,
  serviceMigrations,
} from '../src/template.ts';

/** Every path under `dir` whose mode is not 0700 (directories) or 0600 (files). */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (d: string) => {
    if ((statSync(d).mode & 0o777) !== 0o700) found.push(d);
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile() && (statSync(path).mode & 0o777) !== 0o600) found.push(path);
    }
  };
  walk(dir);
  return found;
}

async function withDatabase<T>(dir: string, fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase({ pgliteDir: dir });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

describe('the databases npm start lays down', () => {
  const top = mkdtempSync(join(tmpdir(), 'standalone-template-'));
  const cache = join(top, 'cache');
  afterAll(() => rmSync(top, { recursive: true, force: true }));

  it("reads each service's migrations as its composition root does", () => {
    const fromApps: Record<EmbeddedDatabase, unknown> = {
      pki: pkiMigrations,
      auth: authMigrations,
      policy: policyMigrations,
      inventory: inventoryMigrations,
      audit: auditMigrations,
    };
    for (const name of Object.keys(embeddedDatabases) as EmbeddedDatabase[]) {
      expect(serviceMigrations(name).length, name).toBeGreaterThan(0);
      expect(serviceMigrations(name), name).toEqual(fromApps[name]);
    }
  });

  it('seeds a first start with the migrations applied: the ready copy moved in once, then copies of the template', async () => {
    const migrations = serviceMigrations('pki');
    const ready = await ensureReadyCopy('pki', migrations, cache);
    const template = await ensureServiceTemplate('pki', migrations, cache);
    expect(openToOthers(cache)).toEqual([]);
    // Schema and the migrations' own rows only: no key material is made before a first start.
    await withDatabase(template, async (db) => {
      expect(await queryRows(db.db, 'select count(*)::int as n from pki_material')).toEqual([{ n: 0 }]);
    });

    const first = join(top, 'data1');
    const second = join(top, 'data2');
    mkdirSync(first, { mode: 0o700 });
    mkdirSync(second, { mode: 0o700 });
    expect(await seedDatabase(first, 'pki', migrations, cache)).toEqual({ seeded: true, from: 'ready copy' });
    expect(existsSync(ready)).toBe(false);
    expect(await seedDatabase(second, 'pki', migrations, cache)).toEqual({ seeded: true, from: 'service template' });
    expect(existsSync(template)).toBe(true);
    // A database that is there is left alone.
    expect(await seedDatabase(first, 'pki', migrations, cache)).toEqual({ seeded: false });

    for (const data of [first, second]) {
      expect(openToOthers(data)).toEqual([]);
      await withDatabase(join(data, 'pki'), async (db) => {
        // `migrate` still runs at start and checks every migration: none is left to apply.
        expect(await migrate(db, migrations)).toEqual([]);
        const versions = await queryRows<{ version: string }>(db.db, 'select version from schema_migrations');
        expect(versions.map((v) => v.version)).toEqual(expect.arrayContaining(migrations.map((m) => m.version)));
        await queryRows(db.db, "insert into pki_material (name, cert_pem) values ('root', 'x')");
      });
    }
    // Each data directory is its own database: what one wrote, the other and the template do not hold.
    await withDatabase(join(second, 'pki'), async (db) => {
      expect(await queryRows(db.db, 'select count(*)::int as n from pki_material')).toEqual([{ n: 1 }]);
    });
    await withDatabase(template, async (db) => {
      expect(await queryRows(db.db, 'select count(*)::int as n from pki_material')).toEqual([{ n: 0 }]);
    });
  }, 120_000);

  it('seeds from the empty template when the migrations changed since the templates were made', async () => {
    const migrations = serviceMigrations('pki');
    await ensureServiceTemplate('pki', migrations, cache);
    const changed = [...migrations, { version: '9999_added_since', sql: 'create table added_since (id int)' }];
    const data = join(top, 'data3');
    mkdirSync(data, { mode: 0o700 });
    expect(await seedDatabase(data, 'pki', changed, cache)).toEqual({ seeded: true, from: 'empty template' });
    await withDatabase(join(data, 'pki'), async (db) => {
      expect(await migrate(db, changed)).toEqual([...platformMigrations, ...changed].map((m) => m.version));
    });
  }, 120_000);
});

describe('embedded databases share one compiled PGlite module', () => {
  it('compiles it once, and each database is still its own', async () => {
    const artifacts = await sharedPgliteArtifacts();
    expect(await sharedPgliteArtifacts()).toBe(artifacts);
    const [a, b] = await Promise.all([openDatabase({ pgliteMemory: true }), openDatabase({ pgliteMemory: true })]);
    try {
      await queryRows(a.db, 'create table only_in_a (n int)');
      await queryRows(a.db, 'insert into only_in_a values (1), (2)');
      expect(await queryRows(a.db, 'select sum(n)::int as s from only_in_a')).toEqual([{ s: 3 }]);
      await expect(queryRows(b.db, 'select * from only_in_a')).rejects.toThrow(/only_in_a/);
      // Extensions load into each instance as before.
      await queryRows(b.db, 'create extension if not exists pg_trgm');
      expect(await queryRows(b.db, "select similarity('controller', 'controller')::float8 as s")).toEqual([{ s: 1 }]);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    expect(await sharedPgliteArtifacts()).toBe(artifacts);
  }, 60_000);
});
