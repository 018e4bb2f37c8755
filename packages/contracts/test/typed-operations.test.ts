import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type * as s from '../src/generated/schemas.ts';
import { operations } from '../src/table.ts';
import type {
  AuthOperationKey,
  OperationBody,
  OperationKey,
  OperationKeyOf,
  OperationQuery,
  OperationReplyData,
  OperationRequestOf,
} from '../src/typed-operations.ts';

// The type assertions are checked by `tsc --noEmit` (this file is part of the type check).
describe('the operation types', () => {
  it('name every operation of the table once, under its owner', () => {
    const text = readFileSync(new URL('../src/generated/operation-types.ts', import.meta.url), 'utf8');
    const owners = [...text.matchAll(/^export type (\w+)OperationKey =\n((?: {2}\| '[^']+'\n?)+);/gm)];
    const listed = owners.flatMap(([, , keys]) => [...keys!.matchAll(/'([^']+)'/g)].map((m) => m[1]));
    expect(listed.sort()).toEqual(operations.map((o) => `${o.api}.${o.operationId}`).sort());
    const auth = owners.find(([, name]) => name === 'Auth')![2]!;
    for (const op of operations.filter((o) => o.owner === 'auth'))
      expect(auth).toContain(`'${op.api}.${op.operationId}'`);
  });

  it('type bodies, queries and answers as the schemas decode them', () => {
    expectTypeOf<OperationKeyOf<'auth'>>().toEqualTypeOf<AuthOperationKey>();
    expectTypeOf<'client.authenticate'>().toExtend<AuthOperationKey>();
    expectTypeOf<'management.listServicePolicies'>().toExtend<OperationKeyOf<'policy'>>();
    expectTypeOf<OperationBody<'management.createIdentity'>>().toEqualTypeOf<z.infer<typeof s.identityCreate>>();
    expectTypeOf<OperationBody<'management.listIdentities'>>().toEqualTypeOf<undefined>();
    expectTypeOf<OperationQuery<'client.authenticate'>['method']>().toEqualTypeOf<'password' | 'cert' | 'ext-jwt'>();
    expectTypeOf<OperationQuery<'management.listIdentities'>['limit']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<OperationReplyData<'management.detailIdentity'>>().toEqualTypeOf<s.IdentityDetail>();
    expectTypeOf<OperationReplyData<'management.getCaJwt'>>().toEqualTypeOf<undefined>();
  });

  it('give a handler the body the gateway validated: required, optional, raw or undeclared', () => {
    expectTypeOf<OperationRequestOf<'management.createIdentity'>['body']>().toEqualTypeOf<s.IdentityCreate>();
    expectTypeOf<OperationRequestOf<'client.authenticate'>['body']>().toEqualTypeOf<s.Authenticate | undefined>();
    // May come as PEM text instead (`rawBody`).
    expectTypeOf<OperationRequestOf<'management.verifyCa'>['body']>().toEqualTypeOf<string | undefined>();
    // Declares none: a JSON body passes as it came.
    expectTypeOf<OperationRequestOf<'client.enroll'>['body']>().toEqualTypeOf<unknown>();
    // A union of keys is the union of their requests.
    type Both = OperationRequestOf<'client.authenticate' | 'management.authenticateMfa'>;
    expectTypeOf<Both['body']>().toEqualTypeOf<s.Authenticate | undefined | s.MfaCode>();
    expectTypeOf<OperationRequestOf<OperationKey>>().toExtend<import('../src/bus.ts').OperationRequest>();
  });
});
