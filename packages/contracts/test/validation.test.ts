import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.ts';
import type { ApiName } from '../src/operation.ts';
import { operationById } from '../src/table.ts';
import {
  type OperationInput,
  checkJsonDepth,
  inputLimits,
  maxBodyBytes,
  readsRawBody,
  validateOperationInput,
} from '../src/validation.ts';

function validate(api: ApiName, operationId: string, input: OperationInput) {
  const op = operationById(api, operationId);
  if (!op) throw new Error(`no operation ${api}.${operationId}`);
  return validateOperationInput(op, input);
}

/** The cause of the COULD_NOT_VALIDATE error `fn` throws. */
function causeOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('COULD_NOT_VALIDATE');
    return (err as ApiError).cause;
  }
  throw new Error('expected a validation error');
}

const identity = { name: 'laptop', type: 'Device', isAdmin: false };

const authPolicy = {
  name: 'strict',
  primary: {
    cert: { allowed: true, allowExpiredCerts: false },
    extJwt: { allowed: false, allowedSigners: [] },
    updb: {
      allowed: true,
      minPasswordLength: 5,
      requireSpecialChar: false,
      requireNumberChar: false,
      requireMixedCase: false,
      maxAttempts: 5,
      lockoutDurationMinutes: 0,
    },
  },
  secondary: { requireTotp: false, requireExtJwtSigner: null },
};

describe('validateOperationInput: bodies', () => {
  it('reports a missing required property like go-openapi', () => {
    const { name: _, ...withoutName } = identity;
    expect(causeOf(() => validate('management', 'createIdentity', { body: withoutName }))).toEqual({
      field: 'name',
      reason: 'name in body is required',
      value: '<nil>',
    });
  });

  it('reports a value outside an enum with the allowed values', () => {
    const policy = { name: 'p', type: 'Dial', semantic: 'OneOf', identityRoles: [], serviceRoles: [] };
    expect(causeOf(() => validate('management', 'createServicePolicy', { body: policy }))).toEqual({
      field: 'semantic',
      reason: 'semantic in body should be one of [AllOf AnyOf]',
      value: 'OneOf',
    });
  });

  it('reports a wrong type, quoting a string value', () => {
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, isAdmin: 'string' } })),
    ).toEqual({
      field: 'isAdmin',
      reason: 'isAdmin in body must be of type boolean: "string"',
      value: 'string',
    });
    expect(causeOf(() => validate('management', 'createIdentity', { body: { ...identity, name: 7 } }))).toEqual({
      field: 'name',
      reason: 'name in body must be of type string',
      value: '7',
    });
  });

  it('names nested fields with dots, array items by index', () => {
    const { maxAttempts: _, ...updb } = authPolicy.primary.updb;
    const body = { ...authPolicy, primary: { ...authPolicy.primary, updb } };
    expect(causeOf(() => validate('management', 'createAuthPolicy', { body }))).toEqual({
      field: 'primary.updb.maxAttempts',
      reason: 'primary.updb.maxAttempts in body is required',
      value: '<nil>',
    });
    const wrongType = { ...authPolicy, primary: { ...authPolicy.primary, updb: { ...updb, maxAttempts: 'x' } } };
    expect(causeOf(() => validate('management', 'createAuthPolicy', { body: wrongType }))).toMatchObject({
      field: 'primary.updb.maxAttempts',
      reason: 'primary.updb.maxAttempts in body must be of type integer: "x"',
    });
    const check = { name: 'os', typeId: 'OS', operatingSystems: [{ type: 'Linux', versions: [7] }] };
    expect(causeOf(() => validate('management', 'createPostureCheck', { body: check }))).toMatchObject({
      field: 'operatingSystems.0.versions.0',
      reason: 'operatingSystems.0.versions.0 in body must be of type string',
    });
  });

  it('reports bounds, lengths and item counts like go-openapi', () => {
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, defaultHostingCost: 70000 } })),
    ).toEqual({
      field: 'defaultHostingCost',
      reason: 'defaultHostingCost in body should be less than or equal to 65535',
      value: '70000',
    });
    const sdkInfo = { appId: 'x'.repeat(256) };
    expect(
      causeOf(() => validate('client', 'authenticate', { query: { method: 'password' }, body: { sdkInfo } })),
    ).toMatchObject({
      field: 'sdkInfo.appId',
      reason: 'sdkInfo.appId in body should be at most 255 chars long',
    });
    const mac = { name: 'mac', typeId: 'MAC', macAddresses: [] };
    expect(causeOf(() => validate('management', 'createPostureCheck', { body: mac }))).toEqual({
      field: 'macAddresses',
      reason: 'macAddresses in body should have at least 1 items',
      value: '[]',
    });
  });

  it('reports only the first problem', () => {
    const cause = causeOf(() => validate('management', 'createIdentity', { body: { isAdmin: 'yes', type: 'Nope' } }));
    expect(cause).toMatchObject({ field: 'isAdmin' });
  });

  it('reports a missing body under the body parameter name', () => {
    expect(causeOf(() => validate('management', 'createIdentity', {}))).toEqual({
      field: 'identity',
      reason: 'identity in body is required',
      value: '',
    });
    expect(causeOf(() => validate('management', 'createIdentity', { body: null, bodyPresent: true }))).toMatchObject({
      field: 'identity',
    });
    expect(causeOf(() => validate('management', 'createIdentity', { body: [identity] }))).toMatchObject({
      field: 'identity',
      reason: 'identity in body must be of type object',
    });
    // An optional body may be left out.
    expect(validate('client', 'authenticate', { query: { method: 'cert' } }).body).toBeUndefined();
  });

  it('passes valid bodies and strips unknown properties, at every depth', () => {
    const body = { ...identity, extra: 1, enrollment: { ott: true, bogus: 'x' }, tags: { team: 'blue', n: null } };
    expect(validate('management', 'createIdentity', { body }).body).toEqual({
      ...identity,
      enrollment: { ott: true },
      tags: { team: 'blue', n: null },
    });
    expect(validate('management', 'createAuthPolicy', { body: authPolicy }).body).toEqual(authPolicy);
  });

  it('admits null where the spec says x-nullable and drops it from other optional properties', () => {
    const body = { ...identity, externalId: null, authPolicyId: null, roleAttributes: null, defaultHostingCost: null };
    expect(validate('management', 'createIdentity', { body }).body).toEqual({
      ...identity,
      externalId: null,
      authPolicyId: null,
      roleAttributes: null,
    });
    expect(causeOf(() => validate('management', 'createIdentity', { body: { ...identity, name: null } }))).toEqual({
      field: 'name',
      reason: 'name in body is required',
      value: '<nil>',
    });
  });

  it('chooses the subtype of a polymorphic body by its discriminator', () => {
    const domain = { name: 'corp', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['a'], stray: true };
    const { stray: _, ...expected } = domain;
    expect(validate('management', 'createPostureCheck', { body: domain }).body).toEqual(expected);
    expect(causeOf(() => validate('management', 'createPostureCheck', { body: { name: 'corp' } }))).toEqual({
      field: 'typeId',
      reason: 'typeId in body is required',
      value: '',
    });
    expect(causeOf(() => validate('management', 'createPostureCheck', { body: { name: 'x', typeId: 'FOO' } }))).toEqual(
      {
        field: 'typeId',
        reason: 'typeId in body should be one of [DOMAIN MAC MFA OS PROCESS PROCESS_MULTI]',
        value: 'FOO',
      },
    );
    const bulk = [
      { id: 'q1', typeId: 'DOMAIN', domain: 'corp' },
      { id: 'q2', typeId: 'ENDPOINT_STATE', woken: true },
    ];
    expect(validate('client', 'createPostureResponseBulk', { body: bulk }).body).toEqual(bulk);
  });

  it('leaves bodies that are not JSON to the owner', () => {
    const verify = validate('management', 'verifyCa', { params: { id: 'ca1' }, bodyPresent: true });
    expect(verify.body).toBeUndefined();
    expect(causeOf(() => validate('management', 'verifyCa', { params: { id: 'ca1' } }))).toMatchObject({
      field: 'certificate',
      reason: 'certificate in body is required',
    });
    // A body on an operation that declares none passes untouched (the console sends `{}` on GET).
    expect(validate('management', 'listIdentities', { body: {} }).body).toEqual({});
  });
});

describe('validateOperationInput: query and path', () => {
  it('reports a non-integer limit with the Go type go-swagger binds it to', () => {
    expect(causeOf(() => validate('management', 'listIdentities', { query: { limit: 'abc' } }))).toEqual({
      field: 'limit',
      reason: 'limit in query must be of type int64: "abc"',
      value: 'abc',
    });
  });

  it('coerces declared parameters and passes undeclared ones through', () => {
    const { query } = validate('management', 'listIdentities', {
      query: { limit: ['5', '20'], offset: '', roleFilter: '#sales', sort: 'name asc', asIdentity: 'bob' },
    });
    // The last of repeated values wins, an empty value is absent, a single multi value becomes a list.
    expect(query).toEqual({ limit: 20, roleFilter: ['#sales'], sort: 'name asc', asIdentity: 'bob' });
    expect(validate('client', 'listServices', { query: { configTypes: ['a', 'b'] } }).query).toEqual({
      configTypes: ['a', 'b'],
    });
  });

  it('reports a missing or invalid required query parameter', () => {
    expect(causeOf(() => validate('client', 'authenticate', { query: {} }))).toEqual({
      field: 'method',
      reason: 'method in query is required',
      value: '[]',
    });
    expect(causeOf(() => validate('client', 'authenticate', { query: { method: 'pw' } }))).toEqual({
      field: 'method',
      reason: 'method in query should be one of [password cert ext-jwt]',
      value: 'pw',
    });
  });

  it('returns path parameters', () => {
    expect(validate('management', 'detailIdentity', { params: { id: 'x1' } }).params).toEqual({ id: 'x1' });
  });
});

describe('input limits (issue 12)', () => {
  it('refuses NUL and lone surrogates in any string, key, path or query value, naming the field', () => {
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, name: 'a\u0000b' } })),
    ).toEqual({
      field: 'name',
      reason: 'name in body must not contain NUL characters',
      value: 'a\u0000b',
    });
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, tags: { k: ['x', '\ud800'] } } })),
    ).toMatchObject({ field: 'tags.k.1', value: '\ufffd' });
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, tags: { 'k\udc00': 1 } } })),
    ).toMatchObject({ field: 'tags.k\udc00' });
    expect(causeOf(() => validate('management', 'detailIdentity', { params: { id: 'a\u0000' } }))).toMatchObject({
      field: 'id',
      reason: 'id in path must not contain NUL characters',
    });
    expect(causeOf(() => validate('management', 'listServices', { query: { configTypes: '\u0000' } }))).toMatchObject({
      field: 'configTypes',
    });
    // A proper surrogate pair is a character like any other.
    expect(
      validate('management', 'createIdentity', { body: { ...identity, name: 'ok \ud83d\ude00' } }).body,
    ).toMatchObject({
      name: 'ok \ud83d\ude00',
    });
  });

  it('bounds names and ids to maxNameLength and other strings to maxTextLength, showing a cut value', () => {
    const long = 'n'.repeat(inputLimits.maxNameLength + 1);
    const cause = causeOf(() => validate('management', 'createIdentity', { body: { ...identity, name: long } })) as {
      reason: string;
      value: string;
    };
    expect(cause.reason).toBe(`name in body should be at most ${inputLimits.maxNameLength} chars long`);
    expect(cause.value.length).toBeLessThan(100);
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, roleAttributes: [long] } })),
    ).toMatchObject({ field: 'roleAttributes.0' });
    expect(causeOf(() => validate('management', 'detailIdentity', { params: { id: long } }))).toMatchObject({
      field: 'id',
    });
    // A tag value is text: long is fine up to the text limit, a key is a name.
    const text = 't'.repeat(inputLimits.maxTextLength);
    expect(validate('management', 'createIdentity', { body: { ...identity, tags: { note: text } } }).body).toBeTruthy();
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, tags: { note: `${text}t` } } })),
    ).toMatchObject({ field: 'tags.note' });
    expect(
      causeOf(() => validate('management', 'createIdentity', { body: { ...identity, tags: { [long]: 1 } } })),
    ).toMatchObject({ reason: expect.stringContaining(`at most ${inputLimits.maxNameLength}`) });
  });

  it('finds JSON nested deeper than maxJsonDepth without parsing it', () => {
    const at = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    expect(() => checkJsonDepth(at(inputLimits.maxJsonDepth))).not.toThrow();
    let refused: unknown;
    try {
      checkJsonDepth(at(inputLimits.maxJsonDepth + 1));
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({
      code: 'COULD_NOT_PARSE_BODY',
      cause: { message: expect.stringMatching(/nested deeper than 32/) },
    });
    // Brackets inside strings (escaped quotes too) are not nesting.
    expect(() => checkJsonDepth(JSON.stringify({ s: '"[[[['.repeat(100) }))).not.toThrow();
  });

  it('sizes bodies per operation: small for anonymous operations and those without a body', () => {
    const op = (api: ApiName, id: string) => operationById(api, id)!;
    expect(maxBodyBytes(op('client', 'authenticate'))).toBe(inputLimits.maxSmallBodyBytes);
    expect(maxBodyBytes(op('client', 'enrollOtt'))).toBe(inputLimits.maxSmallBodyBytes);
    expect(maxBodyBytes(op('management', 'enableIdentity'))).toBe(inputLimits.maxSmallBodyBytes);
    expect(maxBodyBytes(op('management', 'createConfig'))).toBe(inputLimits.maxBodyBytes);
    expect(readsRawBody(op('client', 'enrollOtt'))).toBe(true);
    expect(readsRawBody(op('management', 'verifyCa'))).toBe(true);
    expect(readsRawBody(op('management', 'patchIdentity'))).toBe(false);
  });

  it('reads a null in a PATCH as no change, whatever the field (the reference skips null keys)', () => {
    expect(
      validate('management', 'patchService', {
        params: { id: 's1' },
        body: { roleAttributes: null, name: null, encryptionRequired: true },
      }).body,
    ).toEqual({ encryptionRequired: true });
    expect(
      validate('management', 'patchIdentity', { params: { id: 'i1' }, body: { externalId: null, tags: null } }).body,
    ).toEqual({});
    // Nested objects are fields too: a null inside one, and an object left empty, change nothing
    // (what `ziti edge update auth-policy` sends for what it was not told).
    expect(
      validate('management', 'patchAuthPolicy', {
        params: { id: 'a1' },
        body: {
          primary: { cert: {}, extJwt: { allowedSigners: null }, updb: { maxAttempts: 4 } },
          secondary: {},
          tags: {},
        },
      }).body,
    ).toEqual({ primary: { updb: { maxAttempts: 4 } } });
    // Lists are values: an empty one is an update.
    expect(
      validate('management', 'patchService', { params: { id: 's1' }, body: { roleAttributes: [], tags: { a: 'b' } } })
        .body,
    ).toEqual({ roleAttributes: [], tags: { a: 'b' } });
    // Elsewhere an x-nullable null stays.
    expect(validate('management', 'createIdentity', { body: { ...identity, externalId: null } }).body).toMatchObject({
      externalId: null,
    });
  });
});

describe('validateOperationInput: keys as Go decodes them', () => {
  it('a key that names a property of the prototype (constructor, __proto__) is no field: a 400, never a crash', () => {
    for (const body of [
      { constructor: { prototype: { isAdmin: true } } },
      JSON.parse('{"__proto__": {"isAdmin": true}}'),
      { toString: 1, hasOwnProperty: 'x' },
    ]) {
      let thrown: unknown;
      try {
        validate('client', 'createCurrentApiSessionCertificate', { body });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, JSON.stringify(body)).toBeInstanceOf(ApiError);
      expect((thrown as ApiError).code).toBe('COULD_NOT_VALIDATE');
    }
  });

  it("matches a body's keys to its fields case-insensitively, in nested objects and a polymorphic body's variant", () => {
    // What `ziti edge create posture-check os` sends: its struct has no JSON tags.
    const { body } = validate('management', 'createPostureCheck', {
      body: {
        typeId: 'OS',
        name: 'os-check',
        operatingSystems: [
          { Type: 'Linux', Versions: ['>=5.1.0'] },
          { Type: 'Windows', Versions: ['>=10.0.19041'] },
        ],
      },
    });
    expect(body).toMatchObject({
      typeId: 'OS',
      operatingSystems: [
        { type: 'Linux', versions: ['>=5.1.0'] },
        { type: 'Windows', versions: ['>=10.0.19041'] },
      ],
    });
    const identityBody = validate('management', 'createIdentity', {
      body: { Name: 'laptop', TYPE: 'Device', isadmin: false, tags: { Keep: 'AsIs' } },
    }).body;
    expect(identityBody).toMatchObject({ name: 'laptop', type: 'Device', isAdmin: false, tags: { Keep: 'AsIs' } });
    const discriminated = validate('management', 'createPostureCheck', {
      body: { TypeId: 'DOMAIN', name: 'domain-check', domains: ['example.com'] },
    }).body;
    expect(discriminated).toMatchObject({ typeId: 'DOMAIN', domains: ['example.com'] });
  });

  it('keeps an exact key over one that only matches without case', () => {
    const { body } = validate('management', 'createIdentity', {
      body: { name: 'exact', Name: 'other', type: 'Device', isAdmin: false },
    });
    expect(body).toMatchObject({ name: 'exact' });
  });
});
