import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { startEmbedded } from '../support/embedded.ts';
import { uniqueName, waitFor } from '../support/infra.ts';

/**
 * The audit trail on the real cluster (issue 24): the six services as separate processes, changes made
 * through the management API by the admin, each found in `GET /extensions/audit-records` with the admin as
 * its actor, the caller's address, the gateway's request id (`x-request-id`), the operation and what
 * changed. Every response is validated against the management spec with the extensions merged in.
 */

let e: E2e;
let adminId: string;
let adminName: string;

type AuditRecord = {
  id: string;
  at: string;
  category: string;
  operation: string;
  method?: string;
  requestId: string;
  remoteAddress?: string;
  actorId?: string;
  actorName?: string;
  apiSessionId?: string;
  entityType?: string;
  entityId?: string;
  entityName?: string;
  action: string;
  changes?: Record<string, { before: unknown; after: unknown }>;
  authMethod?: string;
  reason?: string;
  eventId: string;
};

const loopback = ['127.0.0.1', '::ffff:127.0.0.1'];

const mgmt = (path: string, init: Record<string, unknown> = {}) =>
  e.call('management', { path, token: e.adminToken, ...init });

/** The records a filter selects (admin), newest first. */
async function auditRecords(filter: string, token = e.adminToken): Promise<AuditRecord[]> {
  const res = await e.call('management', {
    path: `/extensions/audit-records?filter=${encodeURIComponent(filter)}`,
    token,
  });
  expect(res.status, res.text).toBe(200);
  return res.json.data as AuditRecord[];
}

/** The one record a filter selects, waiting for the trail to catch up (it follows the owners' events). */
async function theRecord(filter: string): Promise<AuditRecord> {
  return waitFor(async () => {
    const found = await auditRecords(filter);
    expect(found.length).toBeLessThanOrEqual(1);
    return found[0];
  }, `the audit record of ${filter}`);
}

/** A change's request id as the gateway answered it. */
function requestIdOf(res: { headers: Record<string, unknown> }): string {
  const id = res.headers['x-request-id'];
  expect(typeof id).toBe('string');
  return id as string;
}

function expectMadeByAdmin(record: AuditRecord, res: { headers: Record<string, unknown> }, operation: string) {
  expect(record).toMatchObject({
    category: 'change',
    operation,
    requestId: requestIdOf(res),
    actorId: adminId,
    actorName: adminName,
  });
  expect(loopback).toContain(record.remoteAddress);
  expect(record.apiSessionId).toEqual(expect.any(String));
  expect(record.eventId).toMatch(/^[a-z-]+:\d+$/);
}

describe('the audit trail on the cluster', () => {
  beforeAll(async () => {
    e = await startE2e();
    const me = await e.call('management', { path: '/current-identity', token: e.adminToken });
    expect(me.status).toBe(200);
    adminId = me.json.data.id;
    adminName = me.json.data.name;
  });
  afterAll(async () => {
    await e?.stop();
  });

  it('records an identity created, renamed, disabled, enabled and deleted by the admin', async () => {
    const name = uniqueName('audited');
    const created = await mgmt('/identities', {
      method: 'POST',
      body: { name, type: 'User', isAdmin: false, roleAttributes: ['audited'] },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.json.data.id as string;
    const creation = await theRecord(`entityId = "${id}" and action = "created"`);
    expectMadeByAdmin(creation, created, 'management.createIdentity');
    expect(creation).toMatchObject({ method: 'POST', entityType: 'identities', entityName: name });
    expect(creation.changes?.name).toEqual({ before: null, after: name });

    const renamed = `${name}-renamed`;
    const patched = await mgmt(`/identities/${id}`, { method: 'PATCH', body: { name: renamed } });
    expect(patched.status, patched.text).toBe(200);
    const rename = await theRecord(`entityId = "${id}" and operation = "management.patchIdentity"`);
    expectMadeByAdmin(rename, patched, 'management.patchIdentity');
    expect(rename).toMatchObject({ method: 'PATCH', action: 'updated', entityName: renamed });
    expect(rename.changes?.name).toEqual({ before: name, after: renamed });
    expect(rename.changes?.roleAttributes).toBeUndefined();

    const disabled = await mgmt(`/identities/${id}/disable`, { method: 'POST', body: { durationMinutes: 5 } });
    expect(disabled.status, disabled.text).toBe(200);
    const disabling = await theRecord(`entityId = "${id}" and operation = "management.disableIdentity"`);
    expectMadeByAdmin(disabling, disabled, 'management.disableIdentity');
    expect(disabling.changes?.disabled).toEqual({ before: false, after: true });
    const enabled = await mgmt(`/identities/${id}/enable`, { method: 'POST' });
    expect(enabled.status, enabled.text).toBe(200);
    const enabling = await theRecord(`entityId = "${id}" and operation = "management.enableIdentity"`);
    expectMadeByAdmin(enabling, enabled, 'management.enableIdentity');
    expect(enabling.changes?.disabled).toEqual({ before: true, after: false });

    const deleted = await mgmt(`/identities/${id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    const deletion = await theRecord(`entityId = "${id}" and action = "deleted"`);
    expectMadeByAdmin(deletion, deleted, 'management.deleteIdentity');
    expect(deletion).toMatchObject({ method: 'DELETE', entityName: renamed });
    expect(deletion.changes?.name).toEqual({ before: renamed, after: null });

    // Newest first by default: the identity's five records in the order they were made, reversed.
    const all = await auditRecords(`entityId = "${id}"`);
    expect(all.map((r) => r.operation)).toEqual([
      'management.deleteIdentity',
      'management.enableIdentity',
      'management.disableIdentity',
      'management.patchIdentity',
      'management.createIdentity',
    ]);
    const oldestFirst = await auditRecords(`entityId = "${id}" sort by at asc limit 2`);
    expect(oldestFirst.map((r) => r.action)).toEqual(['created', 'updated']);
  });

  it('records a service policy created, updated and deleted by the admin', async () => {
    const name = uniqueName('audited-sp');
    const created = await mgmt('/service-policies', {
      method: 'POST',
      body: { name, type: 'Dial', semantic: 'AnyOf', identityRoles: ['#audited'], serviceRoles: ['#all'] },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.json.data.id as string;
    const creation = await theRecord(`entityId = "${id}" and action = "created"`);
    expectMadeByAdmin(creation, created, 'management.createServicePolicy');
    expect(creation).toMatchObject({ entityType: 'servicePolicies', entityName: name, method: 'POST' });

    const patched = await mgmt(`/service-policies/${id}`, {
      method: 'PATCH',
      body: { name: `${name}-2`, identityRoles: ['#audited', '#more'] },
    });
    expect(patched.status, patched.text).toBe(200);
    const update = await theRecord(`entityId = "${id}" and action = "updated"`);
    expectMadeByAdmin(update, patched, 'management.patchServicePolicy');
    expect(update.changes?.name).toEqual({ before: name, after: `${name}-2` });
    expect(update.changes?.identityRoles?.before).toEqual(['#audited']);
    expect(update.changes?.identityRoles?.after).toEqual(expect.arrayContaining(['#audited', '#more']));

    const deleted = await mgmt(`/service-policies/${id}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    const deletion = await theRecord(`entityId = "${id}" and action = "deleted"`);
    expectMadeByAdmin(deletion, deleted, 'management.deleteServicePolicy');
    expect(deletion).toMatchObject({ entityType: 'servicePolicies', method: 'DELETE' });
  });

  it('never holds a password: an authenticator made with one shows no trace of it', async () => {
    const user = await e.createUser();
    const record = await theRecord(`entityId = "${user.authenticatorId}" and action = "created"`);
    expect(record).toMatchObject({
      entityType: 'authenticators',
      actorId: adminId,
      operation: 'management.createAuthenticator',
    });
    expect(JSON.stringify(await auditRecords(`actorId = "${adminId}" limit 100`))).not.toContain(user.password);
  });

  it('answers filters, paging and a bad filter like the other lists', async () => {
    const page = await e.call('management', {
      path: `/extensions/audit-records?limit=2&offset=0&filter=${encodeURIComponent(`actorId = "${adminId}"`)}`,
      token: e.adminToken,
    });
    expect(page.status).toBe(200);
    expect(page.json.data.length).toBe(2);
    expect(page.json.meta.pagination).toMatchObject({ limit: 2, offset: 0 });
    expect(page.json.meta.pagination.totalCount).toBeGreaterThanOrEqual(2);
    expect(page.json.data[0].at >= page.json.data[1].at).toBe(true);

    for (const filter of ['actorId = ', 'noSuchField = "x"']) {
      const bad = await e.call('management', {
        path: `/extensions/audit-records?filter=${encodeURIComponent(filter)}`,
        token: e.adminToken,
      });
      expect(bad.status, filter).toBe(400);
      expect(bad.json.error.code).toBe('INVALID_FILTER');
    }
  });

  it('is for administrators: a non-admin gets what the other admin lists give it', async () => {
    const user = await e.createUser();
    const identities = await e.call('management', { path: '/identities', token: user.token });
    const trail = await e.call('management', { path: '/extensions/audit-records', token: user.token });
    expect(trail.status).toBe(identities.status);
    expect(trail.json.error.code).toBe(identities.json.error.code);
    const anonymous = await e.call('management', { path: '/extensions/audit-records' });
    expect(anonymous.status).toBe(401);
  });

  // auth publishes the attempts in batches, one `authentication.attempted` per batch (docs/adr/0021): each
  // attempt is its own record, keyed by its place in the batch's event.
  it('records a successful login with the identity, method, address and request id', async () => {
    const login = await e.call('management', {
      method: 'POST',
      path: '/authenticate?method=password',
      body: { username: e.cluster.adminUsername, password: e.cluster.adminPassword },
    });
    expect(login.status).toBe(200);
    const requestId = requestIdOf(login);
    const record = await theRecord(`category = "authentication" and requestId = "${requestId}"`);
    expect(record).toMatchObject({
      action: 'succeeded',
      authMethod: 'password',
      actorId: adminId,
      actorName: adminName,
      operation: 'management.authenticate',
      requestId,
    });
    expect(loopback).toContain(record.remoteAddress);
    expect(record.eventId).toMatch(/^auth:\d+#\d+$/);
    expect(JSON.stringify(record)).not.toContain(e.cluster.adminPassword);
  });

  it('records a failed login of an unknown user without naming anyone, each attempt its own record', async () => {
    const username = uniqueName('nobody');
    const tries = await Promise.all(
      [1, 2].map(() =>
        e.call('client', {
          method: 'POST',
          path: '/authenticate?method=password',
          body: { username, password: 'not-the-password' },
        }),
      ),
    );
    const records = await Promise.all(
      tries.map((res) => {
        expect(res.status).toBe(401);
        return theRecord(`category = "authentication" and requestId = "${requestIdOf(res)}"`);
      }),
    );
    for (const record of records) {
      expect(record).toMatchObject({ action: 'failed', authMethod: 'password', operation: 'client.authenticate' });
      expect(record.reason).toBe('INVALID_AUTH');
      expect(record.actorId).toBeUndefined();
      expect(JSON.stringify(record)).not.toContain(username);
      expect(JSON.stringify(record)).not.toContain('not-the-password');
    }
    expect(new Set(records.map((r) => r.eventId)).size).toBe(2);
  });
});

describe('the audit trail under npm start', () => {
  it('records a change made through the API in the one process too (in-process bus, PGlite)', async () => {
    const embedded = await startEmbedded();
    try {
      const call = (path: string, init: Record<string, unknown> = {}) =>
        embedded.call('management', { path, token: embedded.adminToken, ...init });
      const me = (await call('/current-identity')).json.data;
      const name = uniqueName('embedded');
      const created = await call('/identities', { method: 'POST', body: { name, type: 'User', isAdmin: false } });
      expect(created.status, created.text).toBe(201);
      const id = created.json.data.id as string;
      const patched = await call(`/identities/${id}`, { method: 'PATCH', body: { name: `${name}-2` } });
      expect(patched.status, patched.text).toBe(200);
      const list = await call(`/extensions/audit-records?filter=${encodeURIComponent(`entityId = "${id}"`)}`);
      expect(list.status, list.text).toBe(200);
      const [update, creation] = list.json.data as AuditRecord[];
      expect(creation).toMatchObject({ action: 'created', actorId: me.id, actorName: me.name });
      expect(update).toMatchObject({
        action: 'updated',
        operation: 'management.patchIdentity',
        requestId: requestIdOf(patched),
        changes: { name: { before: name, after: `${name}-2` } },
      });
      expect(loopback).toContain(update!.remoteAddress);
    } finally {
      await embedded.stop();
    }
  });
});
