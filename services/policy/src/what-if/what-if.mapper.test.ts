import { ApiError } from '@ziti/contracts';
import type { WhatIfChange } from '@ziti/contracts/generated/schemas';
import { describe, expect, it } from 'vitest';
import { proposedChangesOf } from './what-if.mapper.ts';

/** The error a list of proposals is refused with (fails when it is accepted). */
function refusal(changes: WhatIfChange[]) {
  try {
    proposedChangesOf(changes);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const e = err as ApiError;
    return { code: e.code, field: e.cause?.field, reason: e.cause?.reason };
  }
  throw new Error('accepted');
}

describe('what-if proposals', () => {
  it('decode as the real operations decode their bodies', () => {
    const changes = proposedChangesOf([
      {
        action: 'create',
        entityType: 'servicePolicies',
        body: { name: 'p', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#a'], unknown: 1 },
      },
      { action: 'patch', entityType: 'edgeRouterPolicies', id: 'e1', body: { edgeRouterRoles: ['#r'], name: null } },
      { action: 'delete', entityType: 'postureChecks', id: 'c1' },
      { action: 'patch', entityType: 'identities', id: 'i1', body: { roleAttributes: ['x', 'a', 'x'] } },
    ]);
    expect(changes).toEqual([
      // Unknown properties are stripped, as the gateway strips them.
      {
        action: 'create',
        entityType: 'servicePolicies',
        body: { name: 'p', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#a'] },
      },
      // A PATCH's null means "leave as it is", as the reference reads it.
      { action: 'patch', entityType: 'edgeRouterPolicies', id: 'e1', body: { edgeRouterRoles: ['#r'] } },
      { action: 'delete', entityType: 'postureChecks', id: 'c1' },
      { action: 'patch', entityType: 'identities', id: 'i1', roleAttributes: ['x', 'a', 'x'] },
    ]);
  });

  it('name the field of the change that is wrong', () => {
    const ok = { action: 'delete', entityType: 'servicePolicies', id: 'p1' } as const;
    expect(
      refusal([
        ok,
        { action: 'create', entityType: 'servicePolicies', body: { name: 'p', type: 'Dial', semantic: 'Most' } },
      ]),
    ).toEqual({
      code: 'COULD_NOT_VALIDATE',
      field: 'changes.1.body.semantic',
      reason: 'changes.1.body.semantic in body should be one of [AllOf AnyOf]',
    });
    expect(
      refusal([{ action: 'create', entityType: 'edgeRouterPolicies', body: { semantic: 'AnyOf' } }]),
    ).toMatchObject({
      field: 'changes.0.body.name',
      reason: 'changes.0.body.name in body is required',
    });
    expect(
      refusal([{ action: 'patch', entityType: 'servicePolicies', id: 'p', body: { identityRoles: 'nope' } }]),
    ).toMatchObject({ field: 'changes.0.body.identityRoles' });
    expect(
      refusal([{ action: 'create', entityType: 'postureChecks', body: { name: 'c', typeId: 'NOPE' } }]),
    ).toMatchObject({
      field: 'changes.0.body.typeId',
    });
    expect(refusal([{ action: 'patch', entityType: 'servicePolicies', body: {} }])).toMatchObject({
      field: 'changes.0.id',
    });
    expect(refusal([{ action: 'create', entityType: 'servicePolicies', id: 'x', body: {} }])).toMatchObject({
      field: 'changes.0.id',
    });
    expect(refusal([{ action: 'create', entityType: 'servicePolicies' }])).toMatchObject({ field: 'changes.0.body' });
    expect(refusal([{ action: 'delete', entityType: 'servicePolicies', id: 'x', body: {} }])).toMatchObject({
      field: 'changes.0.body',
    });
    expect(refusal([{ action: 'patch', entityType: 'servicePolicies', id: 'x'.repeat(300), body: {} }])).toMatchObject({
      field: 'changes.0.id',
    });
  });

  it('take role attributes alone for identities, services and edge routers, and patch only', () => {
    expect(refusal([{ action: 'create', entityType: 'identities', body: { roleAttributes: [] } }])).toMatchObject({
      field: 'changes.0.action',
    });
    expect(refusal([{ action: 'delete', entityType: 'services', id: 's1' }])).toMatchObject({
      field: 'changes.0.action',
    });
    expect(
      refusal([{ action: 'patch', entityType: 'edgeRouters', id: 'r', body: { roleAttributes: [], name: 'x' } }]),
    ).toMatchObject({ field: 'changes.0.body.name' });
    expect(
      refusal([{ action: 'patch', entityType: 'services', id: 's', body: { roleAttributes: null } }]),
    ).toMatchObject({
      field: 'changes.0.body.roleAttributes',
    });
    expect(
      refusal([{ action: 'patch', entityType: 'identities', id: 'i', body: { roleAttributes: [7] } }]),
    ).toMatchObject({
      field: 'changes.0.body.roleAttributes.0',
    });
  });
});
