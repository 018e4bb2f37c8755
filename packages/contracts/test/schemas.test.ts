import { describe, expect, it } from 'vitest';
import {
  apiErrorEnvelope,
  apiSessionDetail,
  definitions,
  edgeRouterDetail,
  enrollmentDetail,
  identityDetail,
  postureCheckDetail,
  tags,
} from '../src/generated/schemas.ts';
import { operationById } from '../src/table.ts';
import { extensionsSpec, officialSpec } from './spec-fixtures.ts';

const now = '2024-08-21T10:00:00.000Z';
const entity = { id: 'e1', createdAt: now, updatedAt: now, _links: { self: { href: './things/e1' } }, tags: {} };
const ref = { id: 'r1', name: 'r', entity: 'things', _links: {} };

describe('generated schemas', () => {
  it('exist for every definition an operation uses, in both specs', () => {
    const all = {
      ...officialSpec('client').definitions,
      ...officialSpec('management').definitions,
      ...extensionsSpec().definitions,
    };
    for (const name of Object.keys(definitions)) expect(all[name], name).toBeDefined();
    for (const used of ['identityCreate', 'identityDetail', 'authPolicyCreate', 'postureCheckCreate', 'meta']) {
      expect(Object.keys(definitions)).toContain(used);
    }
  });

  it('validate response records the way clients type-check them', () => {
    const identity = {
      ...entity,
      name: 'laptop',
      type: ref,
      typeId: 'Device',
      isDefaultAdmin: false,
      isAdmin: false,
      authenticators: {},
      enrollment: {},
      envInfo: {},
      sdkInfo: {},
      roleAttributes: null,
      hasEdgeRouterConnection: false,
      hasApiSession: false,
      isMfaEnabled: false,
      serviceHostingPrecedences: {},
      serviceHostingCosts: {},
      defaultHostingCost: 0,
      authPolicyId: 'default',
      authPolicy: ref,
      externalId: null,
      disabled: false,
    };
    expect(identityDetail.safeParse(identity).success).toBe(true);
    const { name: _, ...nameless } = identity;
    expect(identityDetail.safeParse(nameless).success).toBe(false);
    expect(identityDetail.safeParse({ ...identity, createdAt: undefined }).success).toBe(false);
  });

  it('do not require the properties the spec requires but never defines', () => {
    expect(Object.keys(edgeRouterDetail.shape)).not.toContain('os');
    expect(Object.keys(apiSessionDetail.shape)).not.toContain('cachedUpdatedAt');
    expect(Object.keys(enrollmentDetail.shape)).not.toContain('details');
  });

  it('include the recursive error envelope of every error response', () => {
    const error = {
      error: {
        code: 'COULD_NOT_VALIDATE',
        message: 'm',
        requestId: 'r',
        cause: { field: 'name', reason: 'name in body is required', value: '<nil>', cause: { code: 'UNHANDLED' } },
      },
      meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
    };
    expect(apiErrorEnvelope.parse(error)).toEqual(error);
    expect(
      apiErrorEnvelope.safeParse({ ...error, error: { ...error.error, cause: { cause: { code: 7 } } } }).success,
    ).toBe(false);
  });

  it('read tags as a nullable map of any values', () => {
    expect(tags.safeParse({ team: 'blue', on: true, gone: null }).success).toBe(true);
    expect(tags.safeParse(null).success).toBe(true);
    expect(tags.safeParse(['x']).success).toBe(false);
  });

  it('read polymorphic records by their discriminator', () => {
    const check = { ...entity, name: 'mfa', typeId: 'MFA', version: 1, roleAttributes: [], timeoutSeconds: 60 };
    expect(postureCheckDetail.parse(check)).toMatchObject({ typeId: 'MFA', timeoutSeconds: 60 });
    expect(postureCheckDetail.safeParse({ ...check, typeId: 'NOPE' }).success).toBe(false);
  });

  it('give the data of list responses as arrays of records', () => {
    const list = operationById('management', 'listPostureChecks')!.response!;
    expect(list.safeParse([]).success).toBe(true);
    expect(operationById('management', 'listIdentities')!.response).toBe(definitions.identityList);
  });
});
