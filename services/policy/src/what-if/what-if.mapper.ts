import { ApiError, type OperationDef, operationById, validateOperationInput } from '@ziti/contracts';
import type { WhatIfChange, WhatIfResult } from '@ziti/contracts/generated/schemas';
import type { PostureCheckInput } from '../posture/posture-checks.domain.ts';
import type { PolicyInput } from '../policies/policies.domain.ts';
import type { ServiceChange, WhatIfAnswer } from './what-if-diff.domain.ts';
import { type ProposedChange, type WhatIfEntityType, atChange } from './what-if.domain.ts';

/**
 * The real operation each proposal stands for, whose schemas (the gateway's validation of it)
 * decode the proposal's id and body: the same rules, the same reasons.
 */
const realOperations: Record<WhatIfEntityType, Partial<Record<WhatIfChange['action'], string>>> = {
  servicePolicies: { create: 'createServicePolicy', patch: 'patchServicePolicy', delete: 'deleteServicePolicy' },
  edgeRouterPolicies: {
    create: 'createEdgeRouterPolicy',
    patch: 'patchEdgeRouterPolicy',
    delete: 'deleteEdgeRouterPolicy',
  },
  serviceEdgeRouterPolicies: {
    create: 'createServiceEdgeRouterPolicy',
    patch: 'patchServiceEdgeRouterPolicy',
    delete: 'deleteServiceEdgeRouterPolicy',
  },
  postureChecks: { create: 'createPostureCheck', patch: 'patchPostureCheck', delete: 'deletePostureCheck' },
  identities: { patch: 'patchIdentity' },
  services: { patch: 'patchService' },
  edgeRouters: { patch: 'patchEdgeRouter' },
};

function operationOf(change: WhatIfChange): OperationDef | undefined {
  const operationId = realOperations[change.entityType][change.action];
  return operationId === undefined ? undefined : operationById('management', operationId);
}

/** A field error at `changes.<index>.<part>` with a reason that names it. */
const fieldError = (index: number, part: string, text: string, value?: unknown) => {
  const field = `changes.${index}.${part}`;
  return ApiError.field(field, `${field} ${text}`, value);
};

/**
 * Decodes the proposals of a what-if request: each id and body through the schemas of the real
 * operation it stands for (a create's body as `POST /<collection>` takes it, a patch's as
 * `PATCH /<collection>/{id}` does, nulls dropped), errors named at `changes.<index>.…`. The
 * domain rules (names, roles, referenced ids, posture check fields, role attributes) are checked
 * by the domain services themselves when the proposal is made in the sandbox.
 */
export function proposedChangesOf(changes: WhatIfChange[]): ProposedChange[] {
  return changes.map((change, index): ProposedChange => {
    const op = operationOf(change);
    if (!op) {
      throw fieldError(
        index,
        'action',
        `should be patch for ${change.entityType} (a what-if proposes their role attributes only)`,
        change.action,
      );
    }
    if (change.action === 'create' && change.id !== undefined)
      throw fieldError(index, 'id', 'must be absent for a create (the id is generated)', change.id);
    if (change.action !== 'create' && (change.id === undefined || change.id === ''))
      throw fieldError(index, 'id', `is required for a ${change.action}`, change.id ?? '');
    if (change.action === 'delete' && change.body !== undefined)
      throw fieldError(index, 'body', 'must be absent for a delete', '');
    if (change.action !== 'delete' && change.body === undefined)
      throw fieldError(index, 'body', 'in body is required', '');
    let input;
    try {
      input = validateOperationInput(op, {
        params: change.id === undefined ? {} : { id: change.id },
        ...(change.body === undefined ? {} : { body: change.body, bodyPresent: true }),
      });
    } catch (err) {
      const field = err instanceof ApiError ? err.cause?.field : undefined;
      throw atChange(err, index, field === 'id' ? 'id' : 'body');
    }
    const id = input.params.id ?? '';
    const body = (input.body ?? {}) as Record<string, unknown>;
    switch (change.entityType) {
      case 'identities':
      case 'services':
      case 'edgeRouters': {
        const other = Object.keys(change.body ?? {}).find((key) => key !== 'roleAttributes');
        if (other !== undefined)
          throw fieldError(index, `body.${other}`, `can not be proposed: only roleAttributes of ${change.entityType}`);
        if (body.roleAttributes === undefined || body.roleAttributes === null)
          throw fieldError(index, 'body.roleAttributes', 'in body is required');
        return {
          action: 'patch',
          entityType: change.entityType,
          id,
          roleAttributes: body.roleAttributes as string[],
        };
      }
      case 'postureChecks':
        if (change.action === 'delete') return { action: 'delete', entityType: 'postureChecks', id };
        return change.action === 'create'
          ? { action: 'create', entityType: 'postureChecks', body: body as PostureCheckInput }
          : { action: 'patch', entityType: 'postureChecks', id, body: body as PostureCheckInput };
      default:
        if (change.action === 'delete') return { action: 'delete', entityType: change.entityType, id };
        return change.action === 'create'
          ? { action: 'create', entityType: change.entityType, body: body as PolicyInput }
          : { action: 'patch', entityType: change.entityType, id, body: body as PolicyInput };
    }
  });
}

const serviceChange = (s: ServiceChange) => ({
  id: s.service.id,
  name: s.service.name,
  dial: s.dial,
  bind: s.bind,
  edgeRouters: s.edgeRouters,
  postureChecks: s.postureChecks,
});

/** The `data` of a what-if answer (`whatIfResult`). */
export function whatIfResultOf(answer: WhatIfAnswer): WhatIfResult {
  return { summary: answer.summary, truncated: answer.truncated, services: answer.services.map(serviceChange) };
}
