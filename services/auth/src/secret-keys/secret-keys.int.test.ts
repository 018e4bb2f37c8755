import { type Database, MemoryApiSessionStore, SecretBox, openDatabase, queryRows } from '@ziti/platform';
import { SecretKeyRotation } from '@ziti/platform/secret-key-rotation';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../../test/support/infra.ts';
import { RecordedAttempts, authTestBed, seed } from '../../test/authentication/support.ts';
import { IdentityService } from '../identities/identities.domain.ts';
import { MfaService } from '../mfas/mfas.domain.ts';
import { OtplibTotp, PngQrCodes } from '../mfas/otplib-totp.adapter.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import { pgSealedTables } from './secret-keys.store.ts';

/**
 * Key rotation of auth's sealed values on a real Postgres database: MFA records sealed with the old
 * key open with the new key alone once rotated, their TOTP codes still verify, and a second run
 * re-seals nothing.
 */
let database: Database;
let drop: () => Promise<void>;
let work: UnitOfWork;
const oldKey = SecretBox.generateSecret();
const newKey = SecretBox.generateSecret();
const sessions = new MemoryApiSessionStore();

const mfaWith = (box: SecretBox) =>
  new MfaService(work, sessions, new OtplibTotp(), new PngQrCodes(), box, {
    issuer: 'openziti.io',
    sessionTtlSeconds: 1800,
    attempts: new RecordedAttempts(),
  });

beforeAll(async () => {
  const db = await createTestDatabase('auth_rotation');
  drop = db.drop;
  database = await openDatabase({ url: db.url });
  ({ work } = await authTestBed({ database }));
  await seed(work);
});

afterAll(async () => {
  await database?.close();
  await drop?.();
});

describe('auth secret key rotation', () => {
  it('re-seals every MFA secret and recovery code with the new key, in batches, once', async () => {
    const identities = new IdentityService(work, sessions, 1800);
    const old = mfaWith(new SecretBox(oldKey));
    const enrolled: { id: string; secret: string; codes: string[] }[] = [];
    for (let i = 0; i < 5; i++) {
      const identity = await identities.create({ name: `rotation-${i}-${Date.now()}`, type: 'User', isAdmin: false });
      const record = await old.enroll(identity.id);
      enrolled.push({ id: identity.id, secret: record.secret, codes: record.recoveryCodes });
    }
    // The new key alone opens none of them yet.
    await expect(mfaWith(new SecretBox(newKey)).get(enrolled[0]!.id)).rejects.toThrow();

    const rotation = new SecretKeyRotation(
      pgSealedTables(database),
      new SecretBox(newKey, { previousSecrets: [oldKey] }),
    );
    const before = await queryRows<{ updated_at: string }>(database.db, 'select updated_at from mfa order by id');
    const [first] = await rotation.rotate({ batchSize: 2 });
    expect(first).toEqual({
      table: 'mfa',
      counts: { records: 5, values: 10, resealed: 10, current: 0, unreadable: 0, unreadableKeys: [] },
    });
    // A re-seal is not a change of the record: its time stays.
    expect(await queryRows(database.db, 'select updated_at from mfa order by id')).toEqual(before);

    const fresh = mfaWith(new SecretBox(newKey));
    for (const e of enrolled) {
      const record = await fresh.get(e.id);
      expect(record.secret).toBe(e.secret);
      expect(record.recoveryCodes).toEqual(e.codes);
    }
    const [second] = await rotation.rotate({ batchSize: 2 });
    expect(second!.counts).toMatchObject({ resealed: 0, current: 10 });
  });
});
