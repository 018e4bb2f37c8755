import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { renderGeneratedFiles } from '../scripts/generate.ts';
import type { ApiName } from '../src/operation.ts';
import { findOperation, operationById, operations, operationsByOwner } from '../src/table.ts';
import { extensionsSpec, operationsTsv, specOperations } from './spec-fixtures.ts';

const apis: ApiName[] = ['client', 'management'];
const routeOf = (op: { api: string; method: string; path: string }) => `${op.api} ${op.method} ${op.path}`;
/** The operations management-extensions.yml adds (all under /extensions/). */
const extensionCount = Object.values<Record<string, unknown>>(extensionsSpec().paths).reduce(
  (n, item) => n + Object.keys(item).filter((m) => m !== 'parameters').length,
  0,
);
const isExtension = (op: { path: string }) => op.path.startsWith('/extensions/');

describe('the operation table', () => {
  it('has exactly one row per operation of each spec, and nothing else', () => {
    const rows = operations.map(routeOf);
    expect(new Set(rows).size).toBe(rows.length);
    const spec = apis.flatMap((api) => specOperations(api).map(routeOf));
    expect([...rows].sort()).toEqual([...spec].sort());
  });

  it('counts 56 client and 186 management operations of the specs, and the extensions under /extensions/', () => {
    expect(operations.filter((op) => op.api === 'client')).toHaveLength(56);
    expect(operations.filter((op) => op.api === 'management' && !isExtension(op))).toHaveLength(186);
    expect(specOperations('management', 'official')).toHaveLength(186);
    expect(extensionCount).toBeGreaterThan(0);
    expect(operations.filter(isExtension)).toHaveLength(extensionCount);
    expect(operations.filter(isExtension).every((op) => op.api === 'management' && op.access === 'admin')).toBe(true);
    expect(operations).toHaveLength(242 + extensionCount);
  });

  it('carries the operationId and tags of the spec (the logout operations are deleteCurrentApiSession)', () => {
    for (const api of apis) {
      for (const spec of specOperations(api)) {
        const op = findOperation(api, spec.method, spec.path)!;
        expect(op.operationId).toBe(spec.operationId ?? 'deleteCurrentApiSession');
        expect(op.tags).toEqual(spec.tags);
        expect(op.tag).toBe(spec.tags[0]);
      }
    }
    expect(findOperation('client', 'DELETE', '/current-api-session')?.operationId).toBe('deleteCurrentApiSession');
    expect(findOperation('management', 'DELETE', '/current-api-session')?.operationId).toBe('deleteCurrentApiSession');
  });

  it('matches operations.tsv row for row: operationId, tag, owner, access, MFA gating', () => {
    const tsv = operationsTsv();
    expect(tsv).toHaveLength(242 + extensionCount);
    const access: Record<string, string> = { none: 'none', auth: 'authenticated', admin: 'admin' };
    // The only departures from the proposed table: access required by the spec's own text, and the
    // management service reads owned by policy, which alone knows the caller's permissions (§12.3).
    const corrected: Record<string, string> = {
      'client PUT /services/{id}': 'admin',
      'client PATCH /services/{id}': 'admin',
      'client DELETE /services/{id}': 'admin',
    };
    const owners: Record<string, string> = {
      'management GET /services': 'policy',
      'management GET /services/{id}': 'policy',
      'management GET /configs/{id}/services': 'policy',
    };
    for (const row of tsv) {
      const op = findOperation(row.api, row.method, row.path);
      expect(op, routeOf(row)).toBeDefined();
      expect(op!.operationId).toBe(row.operationId.startsWith('(none') ? 'deleteCurrentApiSession' : row.operationId);
      expect(op!.tag).toBe(row.tag);
      expect(op!.owner, routeOf(row)).toBe(owners[`${row.api} ${row.method} ${row.path}`] ?? row.owner);
      expect(op!.access, routeOf(row)).toBe(corrected[`${row.api} ${row.method} ${row.path}`] ?? access[row.access]);
      expect(op!.mfaPendingOk).toBe(row.mfaPendingOk === 'yes');
    }
  });

  it('has unique operationIds within each API', () => {
    for (const api of apis) {
      const ids = operations.filter((op) => op.api === api).map((op) => op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('finds operations by route, id and owner', () => {
    const create = findOperation('management', 'post', '/identities');
    expect(create?.operationId).toBe('createIdentity');
    expect(operationById('management', 'createIdentity')).toBe(create);
    expect(operationById('client', 'createIdentity')).toBeUndefined();
    expect(findOperation('client', 'GET', '/nope')).toBeUndefined();
    const owned = operationsByOwner('auth');
    expect(owned).toContain(create);
    expect(owned.every((op) => op.owner === 'auth')).toBe(true);
    const total = (['gateway', 'auth', 'pki-enrollment', 'policy', 'inventory', 'audit'] as const).reduce(
      (n, owner) => n + operationsByOwner(owner).length,
      0,
    );
    expect(total).toBe(242 + extensionCount);
  });

  it('declares path parameters, bodies and responses as the spec does', () => {
    const update = operationById('management', 'updateIdentity')!;
    expect(update.params?.parse({ id: 'abc' })).toEqual({ id: 'abc' });
    expect(update.bodyName).toBe('identity');
    expect(update.bodyRequired).toBe(true);
    expect(update.successStatuses).toEqual([200]);

    expect(operationById('management', 'createIdentity')!.successStatuses).toEqual([201]);
    expect(operationById('client', 'authenticate')!.bodyRequired).toBe(false);

    // Non-JSON success bodies have no response schema.
    expect(operationById('client', 'listWellKnownCas')!.response).toBeUndefined();
    expect(operationById('client', 'listWellKnownCas')!.produces).toEqual(['application/pkcs7-mime']);
    expect(operationById('management', 'getCaJwt')!.response).toBeUndefined();
    expect(operationById('client', 'detailMfaQrCode')!.response).toBeUndefined();
    // The two enrollment key endpoints answer without an envelope.
    expect(operationById('client', 'getEnrollmentJwks')!.bareResponse).toBe(true);
    expect(operationById('client', 'enrollmentChallenge')!.bareResponse).toBe(true);

    expect(operationById('client', 'enroll')!.consumes).toEqual([
      'application/pkcs10',
      'application/json',
      'application/x-pem-file',
      'text/plain',
    ]);
    expect(operationById('client', 'deleteMfa')!.headers?.parse({ 'mfa-validation-code': '123456' })).toEqual({
      'mfa-validation-code': '123456',
    });
  });

  it('is what the generator produces from the current specs (run `npm run generate` if not)', () => {
    const { files } = renderGeneratedFiles();
    for (const [name, text] of Object.entries(files)) {
      const committed = readFileSync(new URL(`../src/generated/${name}`, import.meta.url), 'utf8');
      expect(committed === text, `src/generated/${name} is stale`).toBe(true);
    }
  });
});
