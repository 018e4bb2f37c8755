import { randomUUID } from 'node:crypto';
import { BufferedEventSink, type Database, SecretBox, migrate, openDatabase, queryRows } from '@ziti/platform';
import { SecretKeyRotation } from '@ziti/platform/secret-key-rotation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { migrations } from '../app.ts';
import { ControllerPkiService } from '../controller-pki/controller-pki.domain.ts';
import { PgPkiMaterialStore } from '../controller-pki/pki-material.store.ts';
import { PgEnrollmentStore } from '../enrollments/enrollments.store.ts';
import { pgSealedTables } from './secret-keys.store.ts';

/**
 * Key rotation on a real Postgres database: what the old key sealed (the controller PKI's keys,
 * enrollment tokens and JWTs) is re-sealed with the new one in batches, after which the new key alone
 * opens everything; a second run re-seals nothing; an interrupted run resumes.
 */
let database: Database;
let drop: () => Promise<void>;
const oldKey = SecretBox.generateSecret();
const newKey = SecretBox.generateSecret();
const address = 'ctrl.rotation.test:1280';
const enrollmentIds: string[] = [];

async function addEnrollments(box: SecretBox, count: number): Promise<void> {
  await database.transaction(async (tx) => {
    const store = new PgEnrollmentStore(tx, box, new BufferedEventSink());
    for (let i = 0; i < count; i++) {
      const id = `enr-${randomUUID()}`;
      enrollmentIds.push(id);
      const now = new Date();
      await store.insert({
        id,
        method: 'ott',
        token: randomUUID(),
        jwt: `header.payload-${id}.signature`,
        identityId: `ident-${id}`,
        edgeRouterId: null,
        transitRouterId: null,
        caId: null,
        username: null,
        expiresAt: new Date(now.getTime() + 3_600_000),
        tags: {},
        createdAt: now,
        updatedAt: now,
      });
    }
  });
}

/** Opens every sealed value of the database with `box`; the number that would not open. */
async function unopenable(box: SecretBox): Promise<number> {
  let failed = 0;
  const material = await queryRows<{ name: string; key_encrypted: string }>(
    database.db,
    'select name, key_encrypted from pki_material where key_encrypted is not null',
  );
  for (const m of material) {
    try {
      box.decrypt(m.key_encrypted, { context: `pki:${m.name}` });
    } catch {
      failed++;
    }
  }
  const rows = await queryRows<{ id: string; token_encrypted: string; jwt_encrypted: string }>(
    database.db,
    'select id, token_encrypted, jwt_encrypted from enrollments',
  );
  for (const r of rows) {
    for (const [token, context] of [
      [r.token_encrypted, `enrollment:${r.id}:token`],
      [r.jwt_encrypted, `enrollment:${r.id}:jwt`],
    ] as const) {
      try {
        box.decrypt(token, { context });
      } catch {
        failed++;
      }
    }
  }
  return failed;
}

beforeAll(async () => {
  const db = await createTestDatabase('pki_rotation');
  drop = db.drop;
  database = await openDatabase({ url: db.url });
  await migrate(database, migrations);
  const old = new SecretBox(oldKey);
  await new ControllerPkiService(new PgPkiMaterialStore(database.db), old, { advertisedAddress: address }).initialize();
  await addEnrollments(old, 7);
});

afterAll(async () => {
  await database?.close();
  await drop?.();
});

describe('pki-enrollment secret key rotation', () => {
  it('re-seals the keys and enrollments in batches so that the new key alone opens them', async () => {
    expect(await unopenable(new SecretBox(newKey))).toBe(3 + 7 * 2);
    const rotation = new SecretKeyRotation(
      pgSealedTables(database),
      new SecretBox(newKey, { previousSecrets: [oldKey] }),
    );

    // A dry run counts and writes nothing.
    const dry = await rotation.rotate({ batchSize: 2, dryRun: true });
    expect(dry.map((t) => [t.table, t.counts.resealed])).toEqual([
      ['pki_material', 3],
      ['enrollments', 14],
    ]);
    expect(await unopenable(new SecretBox(newKey))).toBe(3 + 7 * 2);

    const first = await rotation.rotate({ batchSize: 2 });
    expect(first).toEqual([
      {
        table: 'pki_material',
        counts: { records: 3, values: 3, resealed: 3, current: 0, unreadable: 0, unreadableKeys: [] },
      },
      {
        table: 'enrollments',
        counts: { records: 7, values: 14, resealed: 14, current: 0, unreadable: 0, unreadableKeys: [] },
      },
    ]);
    expect(await unopenable(new SecretBox(newKey))).toBe(0);

    // Idempotent: nothing is left for a second run, which is what says the old key can go.
    const second = await rotation.rotate({ batchSize: 2 });
    expect(second.map((t) => [t.table, t.counts.resealed, t.counts.current])).toEqual([
      ['pki_material', 0, 3],
      ['enrollments', 0, 14],
    ]);

    // The service opens its keys with the new key alone.
    const pki = new ControllerPkiService(new PgPkiMaterialStore(database.db), new SecretBox(newKey), {
      advertisedAddress: address,
    });
    await pki.initialize();
    expect(pki.serverIdentity().keyPem).toContain('PRIVATE KEY');
    const [one] = await database.transaction((tx) =>
      new PgEnrollmentStore(tx, new SecretBox(newKey), new BufferedEventSink()).get(enrollmentIds[0]!).then((e) => [e]),
    );
    expect(one?.jwt).toBe(`header.payload-${enrollmentIds[0]}.signature`);
  });

  it('resumes an interrupted rotation and reports values no key opens', async () => {
    const third = SecretBox.generateSecret();
    // Some values still under the old key (as if a run stopped half-way), one under a key nobody has.
    await addEnrollments(new SecretBox(oldKey), 3);
    await addEnrollments(new SecretBox(third), 1);
    const lost = enrollmentIds[enrollmentIds.length - 1]!;
    const rotation = new SecretKeyRotation(
      pgSealedTables(database),
      new SecretBox(newKey, { previousSecrets: [oldKey] }),
    );
    const [material, enrollments] = await rotation.rotate({ batchSize: 3 });
    expect(material!.counts.resealed).toBe(0);
    expect(enrollments!.counts).toEqual({
      records: 11,
      values: 22,
      resealed: 6,
      current: 14,
      unreadable: 2,
      unreadableKeys: [lost],
    });
    expect(await unopenable(new SecretBox(newKey))).toBe(2);
  });
});
