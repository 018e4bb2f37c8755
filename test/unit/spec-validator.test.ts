import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  createSpecValidator,
  isRfc3339DateTime,
  loadSpecValidator,
  prepareDefinitions,
  SpecValidationError,
  type SwaggerDoc,
} from '../support/spec-validator.ts';

const spec = loadSpecValidator();

/** Runs `fn`, expects a SpecValidationError and returns its message. */
function failure(fn: () => void): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SpecValidationError);
    return (err as Error).message;
  }
  throw new Error('expected a SpecValidationError');
}

// ZITI-FACTS §7.7, verbatim (buildDate is elided in the facts; the spec gives it no format).
const versionBody = {
  data: {
    version: 'v1.1.9',
    revision: '0f0a0acc78cc',
    buildDate: '2024-08-21T…',
    runtimeVersion: 'go1.22.x',
    capabilities: [],
    apiVersions: {
      edge: { v1: { path: '/edge/client/v1', apiBaseUrls: ['https://ctrl:1280/edge/client/v1'] } },
      'edge-client': { v1: { path: '/edge/client/v1', apiBaseUrls: ['https://ctrl:1280/edge/client/v1'] } },
      'edge-management': { v1: { path: '/edge/management/v1', apiBaseUrls: ['https://ctrl:1280/edge/management/v1'] } },
    },
  },
  meta: {},
};

// ZITI-FACTS §2.1.
const validationError = {
  error: {
    code: 'COULD_NOT_VALIDATE',
    message: 'The supplied request contains an invalid document or no valid accept content were available, see cause',
    cause: { field: 'name', reason: 'name in body is required', value: '<nil>' },
    requestId: 'aB3dE.f9',
  },
  meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
};

const unauthorizedError = {
  error: {
    code: 'UNAUTHORIZED',
    message: 'The request could not be completed. The session is not authorized or the credentials are invalid',
    requestId: 'Qw3.rT9x',
  },
  meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
};

// ZITI-FACTS §5.4 / §12.1.
function identity(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const id = 'Zx9kLm.3q';
  const links = Object.fromEntries(
    [
      'edge-router-policies',
      'edge-routers',
      'service-policies',
      'services',
      'posture-data',
      'failed-service-requests',
      'authenticators',
      'enrollments',
      'service-configs',
    ].map((k) => [k, { href: `./identities/${id}/${k}` }]),
  );
  return {
    id,
    createdAt: '2024-08-21T14:03:05.123Z',
    updatedAt: '2024-08-21T14:03:05.123Z',
    tags: {},
    _links: { self: { href: `./identities/${id}` }, ...links, 'auth-policies': { href: './auth-policies/default' } },
    name: 'laptop-01',
    type: {
      id: 'Default',
      name: 'Default',
      entity: 'identity-types',
      _links: { self: { href: './identity-types/Default' } },
    },
    typeId: 'Default',
    isAdmin: false,
    isDefaultAdmin: false,
    roleAttributes: ['sales'],
    hasApiSession: false,
    hasEdgeRouterConnection: false,
    isMfaEnabled: false,
    authPolicyId: 'default',
    authPolicy: {
      id: 'default',
      name: 'Default',
      entity: 'auth-policies',
      _links: { self: { href: './auth-policies/default' } },
    },
    disabled: false,
    externalId: null,
    defaultHostingCost: 0,
    serviceHostingCosts: {},
    serviceHostingPrecedences: {},
    appData: {},
    envInfo: {},
    sdkInfo: {},
    authenticators: { updb: { id: 'aU7.k2', username: 'laptop-01' } },
    enrollment: {},
    ...overrides,
  };
}

// ZITI-FACTS §3.1.
function list(data: unknown[]): Record<string, unknown> {
  return {
    data,
    meta: {
      pagination: { limit: 10, offset: 0, totalCount: data.length },
      filterableFields: ['id', 'createdAt', 'updatedAt', 'tags', 'isSystem', 'name', 'roleAttributes'],
    },
  };
}

function servicePolicy(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '4mXkq7rV2aBc9dEfGhIjKl',
    createdAt: '2024-08-21T14:03:05.123Z',
    updatedAt: '2024-08-21T14:03:05.123Z',
    tags: {},
    _links: {
      self: { href: './service-policies/4mXkq7rV2aBc9dEfGhIjKl' },
      services: { href: './service-policies/4mXkq7rV2aBc9dEfGhIjKl/services' },
      identities: { href: './service-policies/4mXkq7rV2aBc9dEfGhIjKl/identities' },
      'posture-checks': { href: './service-policies/4mXkq7rV2aBc9dEfGhIjKl/posture-checks' },
    },
    name: 'sales-dial',
    type: 'Dial',
    semantic: 'AnyOf',
    identityRoles: ['#sales'],
    identityRolesDisplay: [{ role: '#sales', name: '#sales' }],
    serviceRoles: ['#all'],
    serviceRolesDisplay: [{ role: '#all', name: '#all' }],
    postureCheckRoles: [],
    postureCheckRolesDisplay: [],
    ...overrides,
  };
}

function osPostureCheck(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: '6bQ2pXz0WcR8tYuV4nM1aS',
    createdAt: '2024-08-21T14:03:05.123Z',
    updatedAt: '2024-08-21T14:03:05.123Z',
    tags: {},
    _links: { self: { href: './posture-checks/6bQ2pXz0WcR8tYuV4nM1aS' } },
    name: 'win10',
    typeId: 'OS',
    version: 1,
    roleAttributes: ['desktops'],
    operatingSystems: [{ type: 'Windows', versions: ['10'] }],
    ...overrides,
  };
}

describe('spec-validator: informational and error bodies', () => {
  it('accepts the /version body on both APIs, with any URL form', () => {
    spec.validate('client', 'GET', '/version', 200, versionBody);
    spec.validate('management', 'GET', '/version', 200, versionBody, 'application/json');
    spec.validate('client', 'GET', '/edge/client/v1/version?x=1', 200, versionBody);
    spec.validate(
      'management',
      'get',
      'https://ctrl:1280/edge/management/v1/version',
      200,
      versionBody,
      'application/json; charset=utf-8',
    );
    spec.validate('client', 'GET', '/edge/client/v1', 200, versionBody); // GET / of the API
  });

  it('accepts the error envelope where the spec declares it', () => {
    spec.validate('management', 'POST', '/identities', 400, validationError);
    spec.validate('management', 'GET', '/identities', 401, unauthorizedError);
    spec.validate('client', 'POST', '/authenticate?method=password', 401, {
      ...unauthorizedError,
      error: { code: 'INVALID_AUTH', message: 'The authentication request failed', requestId: 'k1.Xz9' },
    });
    // a nested UNHANDLED cause (§2.1 rule 6) on a 404
    spec.validate('management', 'GET', '/identities/nope', 404, {
      error: {
        code: 'NOT_FOUND',
        message: 'The resource requested was not found or is no longer available',
        cause: { code: 'UNHANDLED', message: 'identity with id nope not found' },
        requestId: 'r3Q.x1',
      },
      meta: { apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' },
    });
  });

  it('rejects an error envelope without meta', () => {
    const msg = failure(() =>
      spec.validate('management', 'POST', '/identities', 400, { error: validationError.error }),
    );
    expect(msg).toContain("missing required property 'meta'");
    expect(msg).toContain('[spec:management] POST /identities → 400');
  });

  it('accepts create and empty envelopes', () => {
    spec.validate('management', 'POST', '/identities', 201, {
      data: { id: 'Zx9kLm.3q', _links: { self: { href: './identities/Zx9kLm.3q' } } },
      meta: {},
    });
    spec.validate('management', 'DELETE', '/identities/Zx9kLm.3q', 200, { data: {}, meta: {} });
  });
});

describe('spec-validator: entity bodies', () => {
  it('accepts a list envelope with pagination for GET /identities', () => {
    spec.validate(
      'management',
      'GET',
      '/identities?limit=10&offset=0',
      200,
      list([identity(), identity({ id: 'b2', roleAttributes: null })]),
    );
    spec.validate('management', 'GET', '/identities', 200, list([]));
  });

  it('rejects a list envelope without pagination totals', () => {
    const body = { data: [], meta: { pagination: { limit: 10, offset: 0 } } };
    expect(failure(() => spec.validate('management', 'GET', '/identities', 200, body))).toMatch(
      /\/meta\/pagination: missing required property 'totalCount'/,
    );
  });

  it('names a missing required property of an identity detail', () => {
    const body = identity();
    delete body.authPolicyId;
    const msg = failure(() =>
      spec.validate('management', 'GET', '/identities/Zx9kLm.3q', 200, { data: body, meta: {} }),
    );
    expect(msg).toContain("/data: missing required property 'authPolicyId'");
    expect(msg).toContain('GET /identities/{id} → 200');
    expect(msg).toContain('#/definitions/detailIdentityEnvelope');
    expect(msg).toContain('body: {"data":{');
  });

  it('rejects a value outside an enum and lists the allowed values', () => {
    spec.validate('management', 'GET', '/service-policies', 200, list([servicePolicy()]));
    const msg = failure(() =>
      spec.validate('management', 'GET', '/service-policies', 200, list([servicePolicy({ type: 'Dail' })])),
    );
    expect(msg).toContain('/data/0/type: must be one of ["Dial","Bind","Invalid"], got "Dail"');
  });

  it('allows null only where x-nullable says so', () => {
    const detail = (overrides: Record<string, unknown>) => ({ data: identity(overrides), meta: {} });
    spec.validate(
      'management',
      'GET',
      '/identities/x',
      200,
      detail({ externalId: null, disabledAt: null, roleAttributes: null, tags: null }),
    );
    expect(failure(() => spec.validate('management', 'GET', '/identities/x', 200, detail({ name: null })))).toContain(
      '/data/name: must be string, got null',
    );
    expect(
      failure(() => spec.validate('management', 'GET', '/identities/x', 200, detail({ authPolicy: null }))),
    ).toContain('/data/authPolicy: must be object, got null');
  });

  it('checks types and date-times strictly, but not href as a URI', () => {
    expect(
      failure(() =>
        spec.validate('management', 'GET', '/identities/x', 200, { data: identity({ isAdmin: 'false' }), meta: {} }),
      ),
    ).toContain('/data/isAdmin: must be boolean');
    expect(
      failure(() =>
        spec.validate('management', 'GET', '/identities/x', 200, {
          data: identity({ createdAt: '2024-08-21 14:03:05' }),
          meta: {},
        }),
      ),
    ).toContain("/data/createdAt: must match format 'date-time'");
    // relative links pass (they are in every body above); a tag value may be any JSON value
    spec.validate('management', 'GET', '/identities/x', 200, {
      data: identity({ tags: { owner: 'ops', n: 1, ok: true } }),
      meta: {},
    });
  });

  it('dispatches posture checks on the typeId discriminator', () => {
    const { operatingSystems: _os, ...base } = osPostureCheck();
    const mfa = {
      ...base,
      typeId: 'MFA',
      timeoutSeconds: -1,
      promptOnWake: false,
      promptOnUnlock: false,
      ignoreLegacyEndpoints: false,
    };
    spec.validate('management', 'GET', '/posture-checks', 200, list([osPostureCheck(), mfa]));
    expect(
      failure(() =>
        spec.validate('management', 'GET', '/posture-checks', 200, list([{ ...mfa, timeoutSeconds: 'never' }])),
      ),
    ).toContain('/data/0/timeoutSeconds: must be integer');
    const missing = osPostureCheck();
    delete missing.operatingSystems;
    expect(failure(() => spec.validate('management', 'GET', '/posture-checks', 200, list([missing])))).toContain(
      "/data/0: missing required property 'operatingSystems'",
    );
    expect(
      failure(() =>
        spec.validate('management', 'GET', '/posture-checks', 200, list([osPostureCheck({ typeId: 'BOGUS' })])),
      ),
    ).toContain('/data/0/typeId: must be one of ["DOMAIN","MAC","MFA","OS","PROCESS","PROCESS_MULTI"], got "BOGUS"');
    expect(
      failure(() =>
        spec.validate('management', 'GET', '/posture-checks/x', 200, {
          data: osPostureCheck({ operatingSystems: [{ type: 'Windows11', versions: [] }] }),
          meta: {},
        }),
      ),
    ).toContain('/data/operatingSystems/0/type: must be one of');
  });

  it('drops exactly the required properties the 0.26.25 specs never define', () => {
    const dropped = (file: 'client' | 'management') => {
      const doc = loadDoc(file);
      return prepareDefinitions(doc.definitions ?? {}, 'x').droppedRequired.map(
        (d) => `${d.split(/[/_]/, 1)[0]}.${d.split(': ')[1]}`,
      );
    };
    const all = new Set([...dropped('client'), ...dropped('management')]);
    expect([...all].sort()).toEqual(
      [
        'apiSessionDetail.cachedUpdatedAt',
        'edgeRouterDetail.arch',
        'edgeRouterDetail.buildDate',
        'edgeRouterDetail.os',
        'edgeRouterDetail.revision',
        'edgeRouterDetail.version',
        'enrollmentDetail.details',
        'postureResponseProcessCreate.process',
      ].sort(),
    );
  });
});

describe('spec-validator: statuses, media types and matching', () => {
  it('rejects an undeclared success status', () => {
    const msg = failure(() => spec.validate('management', 'GET', '/identities', 204, undefined));
    expect(msg).toContain('status 204 is not declared by the operation (declared: 200, 400, 401, 429)');
  });

  it('accepts an undeclared error status only with the error envelope', () => {
    spec.validate('management', 'GET', '/identities', 418, unauthorizedError);
    spec.validate('client', 'GET', '/version', 500, validationError);
    expect(failure(() => spec.validate('client', 'GET', '/version', 500, { oops: true }))).toContain(
      'undeclared error status whose body is not the error envelope',
    );
  });

  it('rejects unknown paths and methods', () => {
    expect(failure(() => spec.validate('management', 'GET', '/no-such-thing', 200, {}))).toContain(
      "no path template of the management spec matches '/no-such-thing'",
    );
    expect(failure(() => spec.validate('client', 'PUT', '/version', 200, versionBody))).toContain(
      'the spec declares no PUT operation for /version (declared: GET)',
    );
    expect(failure(() => spec.validate('client', 'GET', '/edge/management/v1/version', 200, versionBody))).toContain(
      'under the management API base path',
    );
  });

  it('picks the template for concrete paths', () => {
    expect(spec.resolve('management', 'GET', '/identities/abc/authenticators')).toMatchObject({
      template: '/identities/{id}/authenticators',
      params: { id: 'abc' },
      operationId: 'getIdentityAuthenticators',
    });
    expect(spec.resolve('management', 'GET', '/edge/management/v1/identities/a%2Fb?x=1')).toMatchObject({
      template: '/identities/{id}',
      params: { id: 'a/b' },
    });
    expect(spec.resolve('client', 'GET', '/current-identity/mfa/qr-code').template).toBe(
      '/current-identity/mfa/qr-code',
    );
    expect(spec.resolve('client', 'GET', '/edge/client/v1/current-identity/mfa/').template).toBe(
      '/current-identity/mfa',
    );
    expect(spec.resolve('client', 'POST', '/enroll/ott?token=x').template).toBe('/enroll/ott');
  });

  it('only checks the status of non-JSON responses', () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
    spec.validate('client', 'GET', '/current-identity/mfa/qr-code', 200, png, 'image/png');
    spec.validate('client', 'GET', '/current-identity/mfa/qr-code', 404, validationError, 'application/json');
    spec.validate(
      'client',
      'GET',
      '/.well-known/est/cacerts',
      200,
      'MIIMUQYJKoZIhvcNAQcCoIIMQjCCDD4CAQExADALBgkqhkiG9w0BBwGg',
      'application/pkcs7-mime',
    );
    spec.validate('management', 'GET', '/cas/x/jwt', 200, 'eyJhbGciOiJSUzI1NiJ9.e30.sig', 'application/jwt');
    // /enroll answers PEM or a JSON envelope (ZITI-FACTS §8.2); the spec types it as a raw string
    spec.validate('client', 'POST', '/enroll?token=x', 200, '-----BEGIN CERTIFICATE-----\n…', 'application/x-pem-file');
    spec.validate(
      'client',
      'POST',
      '/enroll?method=updb&token=x',
      200,
      { data: {}, meta: {} },
      'application/x-pem-file',
    );
    expect(failure(() => spec.validate('client', 'GET', '/.well-known/est/cacerts', 404, ''))).toContain(
      'undeclared error status whose body is not the error envelope',
    );
  });

  it('rejects a non-JSON body on a JSON operation unless it is empty', () => {
    expect(
      failure(() => spec.validate('management', 'GET', '/identities', 401, '<html>Unauthorized</html>', 'text/html')),
    ).toContain("content-type 'text/html' is neither JSON nor produced by the operation");
    // go-openapi sends the status with the requested non-JSON type and an empty body (ZITI-FACTS §2.1)
    spec.validate('management', 'GET', '/identities', 401, '', 'application/x-pem-file');
    expect(failure(() => spec.validate('management', 'GET', '/identities', 401, undefined))).toContain(
      'the response body is empty',
    );
  });
});

describe('spec-validator: schema preparation on a synthetic spec', () => {
  const doc: SwaggerDoc = {
    basePath: '/api/v1',
    paths: {
      '/things/{id}': { get: { responses: { '200': { schema: { $ref: '#/definitions/thing' } } } } },
      '/things/special': {
        get: {
          responses: {
            '200': { schema: { type: 'object', required: ['special'] } },
            default: { schema: { $ref: '#/definitions/err' } },
          },
        },
      },
      '/{a}/{b}': { get: { responses: { '200': { schema: { type: 'string' } } } } },
    },
    definitions: {
      link: { type: 'object', required: ['href'], properties: { href: { type: 'string', format: 'uri' } } },
      thing: {
        type: 'object',
        required: ['self', 'home', 'kind', 'ghost'],
        properties: {
          self: { $ref: '#/definitions/link' },
          home: { type: 'string', format: 'uri', 'x-nullable': true },
          kind: { type: 'string', enum: ['a', 'b'], 'x-nullable': true, example: 'a' },
          count: { type: 'number', format: 'int64' },
        },
        'x-class': 'ignored',
      },
      err: { type: 'object', required: ['code'], properties: { code: { type: 'string' } } },
    },
  };
  const v = createSpecValidator({ client: doc, management: { ...doc, basePath: '/other/v1' } });

  it('lets static segments beat parameters', () => {
    expect(v.resolve('client', 'GET', '/things/special').template).toBe('/things/special');
    expect(v.resolve('client', 'GET', '/things/other').template).toBe('/things/{id}');
    expect(v.resolve('client', 'GET', '/api/v1/x/y').template).toBe('/{a}/{b}');
  });

  it('uses the default response for undeclared statuses', () => {
    v.validate('client', 'GET', '/things/special', 503, { code: 'TIMEOUT' });
    expect(failure(() => v.validate('client', 'GET', '/things/special', 503, {}))).toContain(
      "missing required property 'code'",
    );
  });

  it('drops undefined required names, keeps uri off href, honours x-nullable enums', () => {
    v.validate('client', 'GET', '/things/1', 200, {
      self: { href: './things/1' },
      home: 'https://x.example/',
      kind: null,
      count: 3,
    });
    expect(
      failure(() =>
        v.validate('client', 'GET', '/things/1', 200, { self: { href: './things/1' }, home: 'not a uri', kind: 'a' }),
      ),
    ).toContain("/home: must match format 'uri'");
    expect(
      failure(() => v.validate('client', 'GET', '/things/1', 200, { self: { href: './x' }, home: null, kind: 'c' })),
    ).toContain('/kind: must be one of ["a","b",null], got "c"');
    expect(
      failure(() =>
        v.validate('client', 'GET', '/things/1', 200, { self: { href: './x' }, home: null, kind: 'a', count: 1.5 }),
      ),
    ).toContain("/count: must match format 'int64'");
    // math.MaxInt64 as JSON.parse reads it (2^63) is an int64; twice that is not
    const maxInt64 = JSON.parse('9223372036854775807') as number;
    v.validate('client', 'GET', '/things/1', 200, { self: { href: './x' }, home: null, kind: 'a', count: maxInt64 });
    expect(
      failure(() =>
        v.validate('client', 'GET', '/things/1', 200, { self: { href: './x' }, home: null, kind: 'a', count: 2 ** 64 }),
      ),
    ).toContain("/count: must match format 'int64'");
  });
});

describe('isRfc3339DateTime', () => {
  it.each([
    ['2024-08-21T14:03:05.123Z', true],
    ['2024-08-21T14:03:05Z', true],
    ['2024-08-21T14:03:05.123456789+02:00', true],
    ['2024-02-29T00:00:00Z', true],
    ['2023-02-29T00:00:00Z', false],
    ['2024-08-21t14:03:05Z', false],
    ['2024-08-21 14:03:05Z', false],
    ['2024-08-21T14:03:05', false],
    ['2024-08-21T24:00:00Z', false],
    ['2024-08-21T23:59:60Z', false],
    ['2024-08-21T14:03:05.1234567890Z', false],
    ['2024-08-21T14:03:05+0200', false],
  ])('%s → %s', (value, ok) => {
    expect(isRfc3339DateTime(value)).toBe(ok);
  });
});

function loadDoc(api: 'client' | 'management'): SwaggerDoc {
  return parse(readFileSync(new URL(`../../../shared/openapi/${api}.yml`, import.meta.url), 'utf8')) as SwaggerDoc;
}
