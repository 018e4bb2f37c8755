/**
 * The fuzz suite (issue 12): every operation of the table, every path, query and body parameter
 * (and the body as a whole, its content type and, for lists, the filter), sent malformed — bad
 * JSON, wrong types, nulls, missing and extra fields, huge and deep values, NUL and lone
 * surrogates, odd content types, bad filters — as an admin and anonymously, to the real cluster.
 *
 * For every answer: no 5xx; an error is the OpenZiti envelope with a 4xx; the answer matches the
 * official spec (the harness checks); a create that was refused created nothing (the collection's
 * count moved by exactly the creates that succeeded); and at the end every process is alive.
 *
 * Bounded for `npm test` (FUZZ_RUNS=2 runs per parameter, a fixed seed); `npm run fuzz` runs more.
 * Knobs: FUZZ_RUNS (runs per parameter), FUZZ_SEED (the base seed; each parameter derives its own),
 * FUZZ_OPS (a substring of `<api>.<operationId>` to fuzz only some operations).
 */
import { createHash } from 'node:crypto';
import { type OperationDef, apiBasePath, inputLimits, operations } from '@ziti/contracts';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type E2e, startE2e } from '../support/e2e.ts';
import { implementedOperationKeys } from '../support/coverage.ts';
import type { HttpResponse } from '../support/http.ts';
import { uniqueName } from '../support/infra.ts';

const runs = Number(process.env.FUZZ_RUNS ?? 2);
const baseSeed = Number(process.env.FUZZ_SEED ?? 20261125);
const only = process.env.FUZZ_OPS;

let e: E2e;
/** Path ids of entities that exist, by the first segment of a spec path; anything else gets an unknown id. */
const fixtures: Record<string, string> = {};

// ---------------------------------------------------------------------------------------------
// What the table says about an operation's input

type Zod = { _zod: { def: Record<string, unknown> & { type: string } } };

/** The schema under optional/nullable/default/pipe/lazy wrappers. */
function unwrap(schema: Zod | undefined): Zod | undefined {
  let s = schema;
  for (let i = 0; s && i < 16; i++) {
    const def = s._zod.def;
    if (['optional', 'nullable', 'default', 'prefault', 'readonly', 'catch', 'nonoptional'].includes(def.type))
      s = def.innerType as Zod;
    else if (def.type === 'pipe') s = def.out as Zod;
    else if (def.type === 'lazy') s = (def.getter as () => Zod)();
    else return s;
  }
  return s;
}

function shapeOf(schema: Zod | undefined): Record<string, Zod> {
  const s = unwrap(schema);
  if (!s) return {};
  if (s._zod.def.type === 'object') return s._zod.def.shape as Record<string, Zod>;
  if (s._zod.def.type === 'union') return shapeOf((s._zod.def.options as Zod[])[0]);
  return {};
}

/** A plausible value for a schema: required properties only, unique strings (so creates can succeed). */
function sample(schema: Zod | undefined, depth = 0): unknown {
  const s = unwrap(schema);
  if (!s || depth > 6) return undefined;
  const def = s._zod.def;
  switch (def.type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(def.shape as Record<string, Zod>)) {
        if (v._zod.def.type === 'optional') continue;
        out[k] = sample(v, depth + 1);
      }
      return out;
    }
    case 'union':
      return sample((def.options as Zod[])[0], depth + 1);
    case 'string':
      return uniqueName('fz');
    case 'enum':
      return Object.values(def.entries as Record<string, string>)[0];
    case 'literal':
      return (def.values as unknown[])[0];
    case 'number':
    case 'int':
      return 1;
    case 'boolean':
      return false;
    case 'array':
      return [];
    case 'record':
      return {};
    default:
      return {};
  }
}

// ---------------------------------------------------------------------------------------------
// Malformed values

const deep = (levels: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 ? { d: v } : [v];
  return v;
};

/** Values that replace one parameter or property (`undefined` = the key is left out). */
const badValues: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    undefined,
    null,
    'a\u0000b',
    '\u0000',
    '\ud800',
    'x\udc00y',
    '',
    ' ',
    'n'.repeat(inputLimits.maxNameLength + 1),
    't'.repeat(inputLimits.maxTextLength + 1),
    '#all',
    '@nope',
    '../../etc/passwd',
    "' or 1=1 --",
    '${jndi:ldap://x}',
    '2024-13-45T99:99:99Z',
    0,
    -1,
    1.5,
    Number.MAX_SAFE_INTEGER + 2,
    1e308,
    true,
    false,
    [],
    ['a\u0000'],
    ['\ud800'],
    Array.from({ length: 300 }, (_, i) => `v${i}`),
    {},
    { '\u0000': 1 },
    { nested: { deeper: { still: ['x'] } } },
    deep(40),
    deep(20, 'ok'),
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Bodies that are not what the operation reads: broken or foreign JSON, deep, huge. */
const badRawBodies: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '{"a":',
    '[1,]',
    'nul',
    'garbage ]{',
    '\u0000',
    '\ufeff{}',
    '"just a string"',
    '12345',
    'true',
    'null',
    '[]',
    '[{}]',
    '{"__proto__":{"isAdmin":true}}',
    '{"constructor":{"prototype":{"isAdmin":true}}}',
    '{"a":1e999}',
    '["\\ud800"]',
    '{"\\u0000":"\\u0000"}',
    '['.repeat(5000) + ']'.repeat(5000),
    '{"a":'.repeat(200) + '1' + '}'.repeat(200),
    // Valid JSON, one byte over the largest body any operation takes.
    ' '.repeat(inputLimits.maxBodyBytes - 1) + '{}',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.json({ maxDepth: 4 }),
);

const oddContentTypes = fc.constantFrom(
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'application/x-pem-file',
  '',
);

const badFilters = fc.oneof(
  fc.constantFrom(
    'name = ',
    'name = "a',
    '(((((((((((((((((((((',
    '('.repeat(300) + 'true' + ')'.repeat(300),
    'tags.x = 1',
    'tags.x.y.z = true',
    'tags = 1',
    'nope = 1',
    'name = 1',
    'name contains 5',
    'id in [' + Array.from({ length: 2000 }, (_, i) => `"${i}"`).join(',') + ']',
    'createdAt > datetime(2020-13-45T99:99:99Z)',
    'createdAt > 5',
    'anyOf(roleAttributes) = "a"',
    'anyOf(nope) = 1',
    'count(x) > 1',
    'isEmpty(from nope where true)',
    'not not not',
    'true sort by nope',
    'true sort by name desc, name asc',
    'true limit -1',
    'true skip 99999999999999999999',
    'true limit none skip 0',
    'name = "\\x"',
    'name ~= "x"',
    'name = "a\u0000"',
    'name between 1 and "z"',
    'isAdmin',
    'roleAttributes = "a"',
  ),
  fc.string({ maxLength: 60 }),
);

const badQueryValues = fc.oneof(
  fc.constantFrom('\u0000', 'abc', '-1', '1.5', '1e10', '99999999999999999999', '', 'true', 'null', 'x'.repeat(10_000)),
  fc.string({ maxLength: 30 }),
);

const badPathValues = fc.oneof(
  fc.constantFrom(
    'a\u0000b',
    'i'.repeat(inputLimits.maxNameLength + 1),
    '..',
    '%',
    '%ED%A0%80',
    '%C0%80',
    '%FF',
    'é',
    '\ud83d\ude00',
    ' ',
    'a/b',
    "' or 1=1",
    '00000000-0000-4000-8000-000000000000',
  ),
  // An empty segment is another path (`/identities//x`), not a bad value of this one.
  fc.string({ minLength: 1, maxLength: 30 }),
);

// ---------------------------------------------------------------------------------------------
// One request

type Caller = 'admin' | 'anonymous' | 'bogus-token';
const callers = fc.constantFrom<Caller>('admin', 'admin', 'anonymous', 'bogus-token');

interface Target {
  kind: 'path' | 'query' | 'body-property' | 'body' | 'content-type' | 'extra-query';
  name: string;
}

function targetsOf(op: OperationDef): Target[] {
  const targets: Target[] = [];
  for (const name of Object.keys(shapeOf(op.params as unknown as Zod | undefined)))
    targets.push({ kind: 'path', name });
  for (const name of Object.keys(shapeOf(op.query as unknown as Zod | undefined)))
    targets.push({ kind: 'query', name });
  targets.push({ kind: 'extra-query', name: 'zz' });
  for (const name of Object.keys(shapeOf(op.body as unknown as Zod | undefined)))
    targets.push({ kind: 'body-property', name });
  // A property the operation does not know.
  if (op.body) targets.push({ kind: 'body-property', name: 'zzExtra' });
  targets.push({ kind: 'body', name: 'body' }, { kind: 'content-type', name: 'content-type' });
  return targets;
}

interface Mutation {
  caller: Caller;
  value: unknown;
}

function arbitraryFor(target: Target): fc.Arbitrary<Mutation> {
  const value: fc.Arbitrary<unknown> =
    target.kind === 'path'
      ? badPathValues
      : target.kind === 'query' && target.name === 'filter'
        ? badFilters
        : target.kind === 'query' || target.kind === 'extra-query'
          ? badQueryValues
          : target.kind === 'body'
            ? badRawBodies
            : target.kind === 'content-type'
              ? oddContentTypes
              : badValues;
  return fc.record({ caller: callers, value });
}

const loneSurrogates = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Percent-encodes a path or query value; the malformed `%…` sequences given on purpose stay as they are. */
function encode(value: string): string {
  if (/^[%0-9A-Fa-f]+$/.test(value) && value.includes('%')) return value;
  // A lone surrogate has no UTF-8 form: it travels as the bytes of its WTF-8 encoding.
  return encodeURIComponent(value.replace(loneSurrogates, '\ufffd')).replace(/%EF%BF%BD/g, '%ED%A0%80');
}

function pathOf(op: OperationDef, target: Target, value: unknown): string {
  const segment = op.path.split('/')[1] ?? '';
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    target.kind === 'path' && target.name === name
      ? encode(String(value))
      : encodeURIComponent(fixtures[segment] ?? 'fuzz-unknown-id'),
  );
  return apiBasePath[op.api] + path;
}

function queryOf(op: OperationDef, target: Target, value: unknown): string {
  const params = new URLSearchParams();
  // `authenticate` and `enroll` need their method to get anywhere.
  if (op.operationId === 'authenticate') params.set('method', 'password');
  if (target.kind !== 'query' && target.kind !== 'extra-query') return params.size ? `?${params}` : '';
  params.delete(target.name);
  const text = params.size ? `${params}&` : '';
  if (value === undefined || value === null) return text ? `?${text.slice(0, -1)}` : '';
  const values = Array.isArray(value) ? value.map(String) : [String(value)];
  return `?${text}${values.map((v) => `${encodeURIComponent(target.name)}=${encode(v)}`).join('&')}`;
}

function bodyOf(op: OperationDef, target: Target, value: unknown): { rawBody?: string; contentType?: string } {
  const base = op.body ? sample(op.body as unknown as Zod) : undefined;
  switch (target.kind) {
    case 'body':
      return { rawBody: String(value), contentType: 'application/json' };
    case 'content-type':
      return { rawBody: JSON.stringify(base ?? {}), contentType: String(value) };
    case 'body-property': {
      const body = { ...((base as Record<string, unknown>) ?? {}) };
      if (value === undefined) delete body[target.name];
      else body[target.name] = value;
      return { rawBody: JSON.stringify(body), contentType: 'application/json' };
    }
    default:
      return base === undefined ? {} : { rawBody: JSON.stringify(base), contentType: 'application/json' };
  }
}

/** Operations no service handles yet answer 501 NOT_IMPLEMENTED whatever the input: not an input defect. */
const implemented = implementedOperationKeys();

/**
 * Where the official spec types an error answer as something other than the error envelope, and
 * the reference (and this controller) answers the envelope: not checked against the spec.
 */
const specQuirks = new Set(['authenticateMfa 401']);

function expectEnvelope(op: OperationDef, res: HttpResponse, what: string): void {
  const notImplemented = !implemented.has(`${op.api}.${op.operationId}`) && res.status === 501;
  if (!notImplemented) expect(res.status, `${what}: a 5xx\n${res.text.slice(0, 400)}`).toBeLessThan(500);
  if (res.status < 400) return;
  expect(res.json?.error, `${what}: an error without the envelope\n${res.text.slice(0, 400)}`).toMatchObject({
    code: expect.any(String),
    message: expect.any(String),
    requestId: expect.any(String),
  });
  expect(res.json.meta, what).toEqual({ apiVersion: '0.0.1', apiEnrollmentVersion: '0.0.1' });
}

// ---------------------------------------------------------------------------------------------
// The walk

/** The list whose count a create moves: `POST /identities` ↔ `GET /identities`. */
function collectionOf(op: OperationDef): OperationDef | undefined {
  if (op.method !== 'POST' || !op.successStatuses.includes(201)) return undefined;
  return operations.find((o) => o.api === op.api && o.method === 'GET' && o.path === op.path && o.query);
}

async function countOf(list: OperationDef): Promise<number> {
  const res = await e.call(list.api, { path: `${apiBasePath[list.api]}${list.path}?limit=1`, token: e.adminToken });
  return res.json?.meta?.pagination?.totalCount as number;
}

/** A session of the admin for this request: logging out (`DELETE /current-api-session`) ends its own. */
async function tokenFor(op: OperationDef, caller: Caller): Promise<string | undefined> {
  if (caller === 'anonymous') return undefined;
  if (caller === 'bogus-token') return 'a5c0ffee-0000-4000-8000-000000000000';
  if (op.operationId === 'deleteCurrentApiSession') return e.login(e.cluster.adminUsername, e.cluster.adminPassword);
  return e.adminToken;
}

async function fuzzOperation(op: OperationDef): Promise<void> {
  const collection = collectionOf(op);
  const before = collection ? await countOf(collection) : 0;
  let created = 0;
  for (const target of targetsOf(op)) {
    const key = `${op.api}.${op.operationId}:${target.kind}:${target.name}`;
    const seed = baseSeed ^ createHash('sha256').update(key).digest().readInt32LE(0);
    await fc.assert(
      fc.asyncProperty(arbitraryFor(target), async ({ caller, value }) => {
        const path = pathOf(op, target, value) + queryOf(op, target, value);
        const { rawBody, contentType } = bodyOf(op, target, value);
        const token = await tokenFor(op, caller);
        const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
        const res = await e.call(op.api, {
          method: op.method,
          path,
          headers,
          ...(rawBody !== undefined ? { rawBody } : {}),
          ...(token ? { token } : {}),
          skipValidation: true,
          streamHead: op.produces.includes('text/event-stream'),
        });
        const what = `${op.method} ${path.slice(0, 200)} as ${caller} (${key}, value ${JSON.stringify(value)?.slice(0, 80)})`;
        expectEnvelope(op, res, what);
        if (!specQuirks.has(`${op.operationId} ${res.status}`)) {
          const contentType = String(res.headers['content-type'] ?? '');
          e.validator.validate(op.api, op.method, path, res.status, res.json ?? (res.text || undefined), contentType);
        }
        if (res.status === 201) created++;
      }),
      { numRuns: runs, seed, endOnFailure: true },
    );
  }
  if (collection)
    expect(await countOf(collection), `${op.operationId}: refused creates created something`).toBe(before + created);
  // Lists declare their filterable fields; a stream's filter is on entity states and has none.
  if (shapeOf(op.query as unknown as Zod | undefined).filter && op.produces.includes('application/json'))
    await probeFilterableFields(op);
  // The admin's session outlives the operation (nothing but its own logout may end it).
  const still = await e.call('management', { path: '/current-api-session', token: e.adminToken });
  expect(still.status, `${op.operationId} ended the admin's session`).toBe(200);
}

/** Comparisons of every kind of value, and the set and map forms, for one filterable symbol. */
const symbolProbes = (field: string) => [
  `${field} = "x"`,
  `${field} = 1`,
  `${field} = true`,
  `${field} = null`,
  `${field} > datetime(2020-01-01T00:00:00Z)`,
  `${field} contains "x"`,
  `${field} in ["a", 2]`,
  `anyOf(${field}) = "x"`,
  `isEmpty(${field})`,
  `${field}.x = 1`,
  `true sort by ${field} desc`,
];

/**
 * Each symbol a list declares filterable (`meta.filterableFields`), probed with comparisons of
 * every type: a symbol whose mapping has no column (`identity-types` `tags`, issue 12) answers a
 * 500 here whichever probe hits it. `npm test` sends one probe per symbol, `npm run fuzz` all.
 */
async function probeFilterableFields(op: OperationDef): Promise<void> {
  const path = pathOf(op, { kind: 'extra-query', name: 'zz' }, undefined);
  const listed = await e.call(op.api, { path: `${path}?limit=1`, token: e.adminToken });
  const fields = (listed.json?.meta?.filterableFields as string[] | undefined) ?? [];
  for (const field of fields) {
    const probes = symbolProbes(field);
    const pick = Math.abs(
      createHash('sha256').update(`${baseSeed}:${op.api}.${op.operationId}:${field}`).digest().readInt32LE(0),
    );
    for (const filter of runs > 2 ? probes : [probes[pick % probes.length]!]) {
      const res = await e.call(op.api, { path: `${path}?filter=${encodeURIComponent(filter)}`, token: e.adminToken });
      expectEnvelope(op, res, `GET ${path}?filter=${filter}`);
    }
  }
}

beforeAll(async () => {
  e = await startE2e();
  const create = async (path: string, body: Record<string, unknown>) => {
    const res = await e.call('management', { method: 'POST', path, token: e.adminToken, body });
    if (res.status === 201) fixtures[path.slice(1)] = res.json.data.id as string;
  };
  fixtures.identities = await e.createIdentity({ roleAttributes: ['fuzz'] });
  await create('/services', { name: uniqueName('fz'), encryptionRequired: true, roleAttributes: ['fuzz'] });
  await create('/config-types', { name: uniqueName('fz') });
  if (fixtures['config-types'])
    await create('/configs', { name: uniqueName('fz'), configTypeId: fixtures['config-types'], data: {} });
  await create('/service-policies', { name: uniqueName('fz'), type: 'Dial', semantic: 'AnyOf' });
  await create('/edge-router-policies', { name: uniqueName('fz'), semantic: 'AnyOf' });
  await create('/service-edge-router-policies', { name: uniqueName('fz'), semantic: 'AnyOf' });
  await create('/edge-routers', { name: uniqueName('fz') });
  await create('/posture-checks', { name: uniqueName('fz'), typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] });
});
afterAll(async () => {
  await e?.stop();
});

// Deletes last, so the fixtures serve every other operation first.
const walk = [...operations]
  .filter((op) => !only || `${op.api}.${op.operationId}`.includes(only))
  .sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));

describe(`fuzz every operation (${runs} runs per parameter, seed ${baseSeed})`, () => {
  for (const op of walk) {
    it(`${op.api} ${op.method} ${op.path} (${op.operationId})`, () => fuzzOperation(op), 30_000 + runs * 20_000);
  }

  it('every process of the cluster is alive and the gateway answers', async () => {
    for (const p of e.cluster.processes()) expect(() => process.kill(p.pid!, 0), `${p.service} died`).not.toThrow();
    expect(
      e.cluster
        .processes()
        .map((p) => p.service)
        .sort(),
    ).toEqual(['audit', 'auth', 'fabric', 'gateway', 'inventory', 'pki-enrollment', 'policy'].sort());
    expect((await e.call('management', { path: '/identities?limit=1', token: e.adminToken })).status).toBe(200);
  });
});
