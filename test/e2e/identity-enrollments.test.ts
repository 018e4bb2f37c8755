import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { waitFor } from '../support/infra.ts';

/**
 * auth's read model of pki-enrollment's outstanding enrollments (docs/adr/0012): an identity
 * detail asks pki-enrollment only for identities that have one, and a session sees its own
 * enrollment writes on its very next read (read-your-writes, docs/adr/0008).
 */
let e: E2e;
beforeAll(async () => {
  e = await startE2e();
});
afterAll(async () => {
  await e?.stop();
});

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: e.adminToken, ...init });
const inMinutes = (m: number) => new Date(Date.now() + m * 60_000).toISOString();

describe('outstanding enrollments on identity details', () => {
  it('an enrollment created and deleted through /enrollments shows and disappears on the very next read', async () => {
    const identityId = await e.createIdentity();
    expect((await mgmt(`/identities/${identityId}`)).json.data.enrollment).toEqual({});

    const created = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: inMinutes(60) },
    });
    expect(created.status).toBe(201);
    const enrollmentId = created.json.data.id as string;
    const shown = await mgmt(`/identities/${identityId}`);
    expect(shown.status).toBe(200);
    expect(shown.json.data.enrollment.ott).toMatchObject({ id: enrollmentId, token: expect.any(String) });
    // In lists too.
    const listed = await mgmt(`/identities?filter=${encodeURIComponent(`id = "${identityId}"`)}`);
    expect(listed.json.data[0].enrollment.ott.id).toBe(enrollmentId);

    expect((await mgmt(`/enrollments/${enrollmentId}`, { method: 'DELETE' })).status).toBe(200);
    const gone = await mgmt(`/identities/${identityId}`);
    expect(gone.status).toBe(200);
    expect(gone.json.data.enrollment).toEqual({});
  });

  it('with pki-enrollment stopped, identities without an enrollment are still served; one with an enrollment is a 503', async () => {
    const user = await e.createUser();
    const plain = await e.createIdentity();
    const enrolled = await e.createIdentity({ enrollment: { ott: true } });
    // Read-your-writes: the enrollment made with the identity is on the next read.
    expect((await mgmt(`/identities/${enrolled}`)).json.data.enrollment.ott).toMatchObject({ id: expect.any(String) });

    await e.cluster.stopService('pki-enrollment');
    try {
      const detail = await mgmt(`/identities/${plain}`);
      expect(detail.status).toBe(200);
      expect(detail.json.data.enrollment).toEqual({});
      const current = await e.call('client', { path: '/current-identity', token: user.token });
      expect(current.status).toBe(200);
      expect(current.json.data.id).toBe(user.id);
      const page = await mgmt(`/identities?filter=${encodeURIComponent(`id in ["${plain}", "${user.id}"]`)}`);
      expect(page.status).toBe(200);
      expect(page.json.data).toHaveLength(2);

      const withEnrollment = await mgmt(`/identities/${enrolled}`);
      expect(withEnrollment.status).toBe(503);
      expect(['SERVICE_UNAVAILABLE', 'TIMEOUT']).toContain(withEnrollment.json.error.code);
    } finally {
      await e.cluster.startService('pki-enrollment');
    }
    expect((await mgmt(`/identities/${enrolled}`)).status).toBe(200);
  });

  it('is rebuilt from pki-enrollment state when auth resyncs (the events are not replayed)', async () => {
    const identityId = await e.createIdentity();
    const created = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'updb', identityId, username: `u-${identityId}`, expiresAt: inMinutes(60) },
    });
    expect(created.status).toBe(201);
    expect((await mgmt(`/identities/${identityId}`)).json.data.enrollment.updb.id).toBe(created.json.data.id);

    await e.cluster.stopService('auth');
    const client = new pg.Client({ connectionString: e.cluster.databases.auth });
    await client.connect();
    try {
      await client.query('delete from outstanding_enrollments');
      await client.query(`update event_cursors set resync_required = true where consumer = 'auth-from-pki-enrollment'`);
    } finally {
      await client.end();
      await e.cluster.startService('auth');
    }
    await waitFor(async () => {
      const res = await mgmt(`/identities/${identityId}`);
      return res.status === 200 && res.json.data.enrollment.updb?.id === created.json.data.id;
    }, 'the read model rebuilt from pki-enrollment');
  });

  it('drift in the read model is found by the data-integrity check and repaired by the fix', async () => {
    const identityId = await e.createIdentity();
    const created = await mgmt('/enrollments', {
      method: 'POST',
      body: { method: 'ott', identityId, expiresAt: inMinutes(60) },
    });
    expect(created.status).toBe(201);
    const enrollmentId = created.json.data.id as string;
    const ghostOwner = await e.createIdentity();
    const ghost = `ghost-${enrollmentId}`;
    const sql = async (text: string, params: unknown[] = []) => {
      const client = new pg.Client({ connectionString: e.cluster.databases.auth });
      await client.connect();
      try {
        return (await client.query(text, params)).rows;
      } finally {
        await client.end();
      }
    };
    await sql('delete from outstanding_enrollments where id = $1', [enrollmentId]);
    await sql(
      `insert into outstanding_enrollments (id, identity_id, expires_at, source_sequence) values ($1, $2, now() + interval '1 hour', 1)`,
      [ghost, ghostOwner],
    );
    // The planted loss hides the enrollment: nothing asks pki-enrollment about the identity.
    expect((await mgmt(`/identities/${identityId}`)).json.data.enrollment).toEqual({});

    const results = async () =>
      waitFor(
        async () => {
          const res = await mgmt('/database/data-integrity-results');
          return res.status === 200 && !res.json.data.inProgress ? res.json.data : undefined;
        },
        'the integrity job to finish',
        60_000,
        200,
      );
    // Ordered by description on both sides: the findings' order follows the (random) ids.
    const byDescription = <T extends { description: string }>(list: T[]) =>
      [...list].sort((a, b) => (a.description < b.description ? -1 : 1));
    const mine = (r: { results: { description: string; fixed: boolean }[] }) =>
      byDescription(r.results.filter((x) => x.description.includes(enrollmentId)));
    await waitFor(
      async () => (await mgmt('/database/check-data-integrity', { method: 'POST' })).status === 202,
      'a check to start',
    );
    expect(mine(await results())).toEqual(
      byDescription([
        {
          description: `auth: read model: enrollment ${enrollmentId} of identity ${identityId} is missing from the read model`,
          fixed: false,
        },
        {
          description: `auth: read model: enrollment ${ghost} of identity ${ghostOwner} is in the read model but its owner no longer has it`,
          fixed: false,
        },
      ]),
    );
    await waitFor(
      async () => (await mgmt('/database/fix-data-integrity', { method: 'POST' })).status === 202,
      'a fix to start',
    );
    await waitFor(async () => {
      const fixed = mine(await results());
      return fixed.length === 2 && fixed.every((r) => r.fixed);
    }, 'the fix of both');
    expect((await mgmt(`/identities/${identityId}`)).json.data.enrollment.ott.id).toBe(enrollmentId);
    expect(await sql('select deleted from outstanding_enrollments where id = $1', [ghost])).toEqual([
      { deleted: true },
    ]);
  });
});
