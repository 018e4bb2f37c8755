/**
 * The request sequence of the differential suite (test/e2e/differential.test.ts), as data: one line
 * per request. `m(…)` is a Management API step, `c(…)` a Client API step: `METHOD /path` (placeholders
 * `{var}` for values an earlier step saved: ids, tokens, secrets, certificates), the case, and
 * options (`as` the session variable, `body`, `query`, `save`, `expect` the reference's status).
 * See test/support/differential.ts for what the options mean and how answers are compared.
 *
 * `mainSteps` builds the entities (keeping the primary ones alive), `genericSteps` derives the cases
 * every operation gets from its first `happy` step (no session, non-admin, MFA pending, unknown id,
 * paging/filter/sort on every list, empty/broken/wrongly typed bodies, PATCH with `null` and `""`,
 * duplicate names), and `lifecycleSteps` deletes and re-enrolls things and looks at what that did to
 * the others. Adding a case is one line.
 */
import { randomUUID } from 'node:crypto';
import { createGuardrails, generate } from 'otplib';
import { type OperationDef, operations } from '@ziti/contracts';
import { certificateFor, newSigningKey, signToken } from '../../services/auth/test/authentication/jwt-kit.ts';
import {
  type TestCa,
  type TestClientCert,
  makeCsr,
  makeTestCa,
  verificationCertificate,
} from '../../services/pki-enrollment/test/support.ts';
import type { Answer, Step, StepOptions, Vars } from './differential.ts';
import { jsonOf, makeStep } from './differential.ts';
import { authPolicyBody } from './e2e.ts';
import type { HttpResponse } from './http.ts';

const m = (spec: string, kase: string, o: StepOptions = {}) => makeStep('management', spec, kase, o);
const c = (spec: string, kase: string, o: StepOptions = {}) => makeStep('client', spec, kase, o);

const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });
const totp = (v: Vars, name: string) => generate({ secret: String(v.get(name)), guardrails });
const code = (name: string) => async (v: Vars) => ({ code: await totp(v, name) });
const codeHeader = (name: string) => async (v: Vars) => ({ 'mfa-validation-code': await totp(v, name) });
const mfaSecret = (res: HttpResponse) => {
  const url = res.json?.data?.provisioningUrl;
  return typeof url === 'string' ? (new URL(url).searchParams.get('secret') ?? undefined) : undefined;
};
const at = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();
const pw = (username: string, password: string): StepOptions => ({
  as: 'none',
  query: { method: 'password' },
  body: { username, password },
});
const certPair = (csr: { keyPem: string }) => (res: HttpResponse) => {
  const cert =
    (jsonOf(res) as { data?: { cert?: unknown } } | undefined)?.data?.cert ??
    (res.text.includes('BEGIN CERTIFICATE') ? res.text : undefined);
  return typeof cert === 'string' ? { cert, key: csr.keyPem } : undefined;
};
const clientPair = (cert: TestClientCert) => ({ cert: cert.chainPem, key: cert.keyPem });
const PEM = 'application/x-pem-file';

/** What the sequence needs made beforehand: CAs, keys, CSRs, a signed external JWT. */
export interface Materials {
  ca: TestCa;
  ca2: TestCa;
  /** For the CA creates that should fail (so a wrongly accepted one uses no certificate a later step needs). */
  ca3: TestCa;
  strangerCa: TestCa;
  caClient1: TestClientCert;
  caClient2: TestClientCert;
  caClient3: TestClientCert;
  strangerClient: TestClientCert;
  leafPem: string;
  /** A client certificate the CA's root signed itself (for a cert authenticator of one certificate). */
  rootSignedPem: string;
  csrs: Record<'alice' | 'alice2' | 'carol' | 'gina' | 'session' | 'junk', { csrPem: string; keyPem: string }>;
  signerCertPem: string;
  extJwt: string;
  extJwtWrongAudience: string;
  routerCsrs: (routerId: unknown) => Promise<{ serverCertCsr: string; certCsr: string; keyPem: string }>;
}

export async function makeMaterials(): Promise<Materials> {
  const [ca, ca2, ca3, strangerCa] = await Promise.all([
    makeTestCa('diff-ca'),
    makeTestCa('diff-ca-2'),
    makeTestCa('diff-ca-3'),
    makeTestCa('diff-stranger'),
  ]);
  const [caClient1, caClient2, caClient3, strangerClient, leaf] = await Promise.all([
    ca.issueClient('CN=diff-ottca-dave'),
    ca.issueClient('CN=diff-auto'),
    ca.issueClient('CN=diff-auto-3'),
    strangerCa.issueClient('CN=diff-stranger'),
    ca.issueClient('CN=diff-leaf'),
  ]);
  const names = ['alice', 'alice2', 'carol', 'gina', 'session', 'junk'] as const;
  const made = await Promise.all(names.map((n) => makeCsr(`CN=diff-${n}`)));
  const csrs = Object.fromEntries(names.map((n, i) => [n, made[i]!])) as unknown as Materials['csrs'];
  const key = await newSigningKey('diff-kid', 'ES256');
  const signerCertPem = await certificateFor(key, 'diff-signer');
  const extJwt = await signToken(key, {
    issuer: 'https://diff-issuer.example',
    audience: 'diff-audience',
    subject: 'ext-frank',
    expiresIn: 3600,
  });
  const extJwtWrongAudience = await signToken(key, {
    issuer: 'https://diff-issuer.example',
    audience: 'someone-else',
    subject: 'ext-frank',
    expiresIn: 3600,
  });
  const routers = new Map<string, Promise<{ serverCertCsr: string; certCsr: string; keyPem: string }>>();
  const routerCsrs = (routerId: unknown) => {
    const id = String(routerId);
    let made = routers.get(id);
    if (!made) {
      made = (async () => {
        const server = await makeCsr(`CN=${id}`, [
          { type: 'dns', value: 'localhost' },
          { type: 'ip', value: '127.0.0.1' },
        ]);
        const client = await makeCsr(`CN=${id}`);
        return { serverCertCsr: server.csrPem, certCsr: client.csrPem, keyPem: client.keyPem };
      })();
      routers.set(id, made);
    }
    return made;
  };
  return {
    ca,
    ca2,
    ca3,
    strangerCa,
    caClient1,
    caClient2,
    caClient3,
    strangerClient,
    leafPem: leaf.certPem,
    rootSignedPem: await verificationCertificate(ca, 'diff-kate'),
    csrs,
    signerCertPem,
    extJwt,
    extJwtWrongAudience,
    routerCsrs,
  };
}

/** Variables each controller starts with (the rest come from `save`). */
export function seedVariables(x: Materials, admin: { username: string; password: string }): Vars {
  return new Map<string, unknown>([
    ['adminUsername', admin.username],
    ['adminPassword', admin.password],
    ['caClient1', clientPair(x.caClient1)],
    ['caClient2', clientPair(x.caClient2)],
    ['caClient3', clientPair(x.caClient3)],
    ['strangerClient', clientPair(x.strangerClient)],
  ]);
}

// ---------------------------------------------------------------------------------------------
// The sequence

const identity = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'User',
  isAdmin: false,
  ...extra,
});
const hostData = { protocol: 'tcp', address: '127.0.0.1', port: 8080 };
const interceptData = { protocols: ['tcp'], addresses: ['d-web.example'], portRanges: [{ low: 80, high: 80 }] };
const signer = (x: Materials, extra: Record<string, unknown> = {}) => ({
  name: 'd-signer',
  enabled: true,
  issuer: 'https://diff-issuer.example',
  audience: 'diff-audience',
  certPem: x.signerCertPem,
  kid: 'diff-kid',
  externalAuthUrl: 'https://login.diff.example/authorize',
  clientId: 'ziti',
  scopes: ['openid'],
  claimsProperty: 'sub',
  useExternalId: true,
  ...extra,
});
const caBody = (x: TestCa, extra: Record<string, unknown> = {}) => ({
  name: 'd-ca',
  certPem: x.rootPem,
  isAutoCaEnrollmentEnabled: true,
  isOttCaEnrollmentEnabled: true,
  isAuthEnabled: true,
  identityRoles: ['ca-auto'],
  identityNameFormat: '[caName]-[commonName]',
  ...extra,
});
const sp = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  type: 'Dial',
  semantic: 'AnyOf',
  identityRoles: [],
  serviceRoles: [],
  postureCheckRoles: [],
  ...extra,
});
const erp = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  semantic: 'AnyOf',
  identityRoles: [],
  edgeRouterRoles: [],
  ...extra,
});
const serp = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  semantic: 'AnyOf',
  serviceRoles: [],
  edgeRouterRoles: [],
  ...extra,
});
const UNKNOWN_TOKEN = '00000000-0000-4000-8000-000000000000';
/** A router's enrollment body: server and client CSRs whose common name is the router's id. */
const routerCsrBody = (x: Materials, router: string) => async (v: Vars) => {
  const { serverCertCsr, certCsr } = await x.routerCsrs(v.get(router));
  return { serverCertCsr, certCsr };
};

export function mainSteps(x: Materials): Step[] {
  return [
    // --- informational, anonymous ---
    c('GET /', 'happy', { as: 'none', expect: 200 }),
    m('GET /', 'happy', { as: 'none', expect: 200 }),
    c('GET /version', 'happy', { as: 'none', expect: 200 }),
    m('GET /version', 'happy', { as: 'none', expect: 200 }),
    c('GET /.well-known/est/cacerts', 'happy', { as: 'none', expect: 200 }),
    m('GET /.well-known/est/cacerts', 'happy', { as: 'none', expect: 200 }),
    c('GET /.well-known/est/cacerts', 'accept-json', { as: 'none', headers: { accept: 'application/json' } }),
    c('GET /enumerated-capabilities', 'happy', { as: 'none', expect: 200 }),
    m('GET /enumerated-capabilities', 'happy', { as: 'none', expect: 200 }),
    c('GET /protocols', 'happy', { as: 'none', expect: 200 }),
    c('GET /specs', 'happy', { as: 'none', expect: 200 }),
    m('GET /specs', 'happy', { as: 'none', expect: 200 }),
    c('GET /specs/edge-client', 'happy', { as: 'none', expect: 200 }),
    m('GET /specs/edge-management', 'happy', { as: 'none', expect: 200 }),
    m('GET /specs/edge-client', 'other-api', { as: 'none' }),
    c('GET /specs/nope', 'unknown-id', { as: 'none' }),
    c('GET /specs/edge-client/spec', 'happy', { as: 'none', compare: 'status', expect: 200 }),
    m('GET /specs/edge-management/spec', 'happy', { as: 'none', compare: 'status', expect: 200 }),
    m('GET /specs/nope/spec', 'unknown-id', { as: 'none' }),
    c('GET /external-jwt-signers', 'happy', { as: 'none', expect: 200 }),
    c('GET /enroll/jwks', 'happy', { as: 'none' }),
    c('POST /enroll/challenge', 'happy', { as: 'none', body: { nonce: randomUUID(), keyId: 'diff-kid' } }),
    c('POST /enroll/challenge', 'missing-fields', { as: 'none', body: {} }),

    // --- authentication (auth) ---
    m('POST /authenticate', 'happy', {
      ...pw('{adminUsername}', '{adminPassword}'),
      save: {
        admin: 'data.token',
        adminId: 'data.identityId',
        adminAuth: 'data.authenticatorId',
        adminSession: 'data.id',
      },
      expect: 200,
    }),
    c('POST /authenticate', 'happy', {
      ...pw('{adminUsername}', '{adminPassword}'),
      save: { adminClient: 'data.token', adminClientSession: 'data.id' },
      expect: 200,
    }),
    c('POST /authenticate', 'config-types', {
      as: 'none',
      query: { method: 'password' },
      body: {
        username: '{adminUsername}',
        password: '{adminPassword}',
        configTypes: ['intercept.v1', 'nope', 'host.v1'],
      },
      expect: 200,
    }),
    c('POST /authenticate', 'env-info', {
      as: 'none',
      query: { method: 'password' },
      body: {
        username: '{adminUsername}',
        password: '{adminPassword}',
        envInfo: { arch: 'amd64', os: 'linux', osRelease: '6.1', osVersion: '6.1', hostname: 'diff-host', domain: '' },
        sdkInfo: { appId: 'diff', appVersion: '1.0', branch: 'main', revision: 'abc', type: 'diff', version: '1.0.0' },
      },
      expect: 200,
    }),
    m('POST /authenticate', 'wrong-password', { ...pw('{adminUsername}', 'wrong-password'), expect: 401 }),
    m('POST /authenticate', 'unknown-user', { ...pw('nobody-here', 'whatever-pw'), expect: 401 }),
    m('POST /authenticate', 'missing-password', { as: 'none', query: { method: 'password' }, body: { username: 'x' } }),
    m('POST /authenticate', 'empty-credentials', pw('', '')),
    m('POST /authenticate', 'no-body', { as: 'none', query: { method: 'password' } }),
    m('POST /authenticate', 'wrong-types', {
      as: 'none',
      query: { method: 'password' },
      body: { username: 1, password: 2 },
    }),
    m('POST /authenticate', 'unparsable', { as: 'none', query: { method: 'password' }, raw: '{"username":' }),
    m('POST /authenticate', 'bad-method', { ...pw('{adminUsername}', '{adminPassword}'), query: { method: 'bogus' } }),
    m('POST /authenticate', 'no-method', {
      as: 'none',
      body: { username: '{adminUsername}', password: '{adminPassword}' },
    }),
    m('POST /authenticate', 'cert-without-cert', { as: 'none', query: { method: 'cert' }, body: {} }),
    m('POST /authenticate', 'ext-jwt-without-jwt', { as: 'none', query: { method: 'ext-jwt' }, body: {} }),
    c('POST /authenticate', 'cert-unknown-ca', {
      as: 'none',
      query: { method: 'cert' },
      body: {},
      cert: 'strangerClient',
    }),
    m('GET /current-api-session', 'happy', { expect: 200 }),
    c('GET /current-api-session', 'happy', { as: 'adminClient', expect: 200 }),
    m('GET /current-api-session', 'not-a-uuid-token', { as: 'none', headers: { 'zt-session': 'not-a-uuid' } }),
    m('GET /current-api-session', 'unknown-token', { as: 'none', headers: { 'zt-session': UNKNOWN_TOKEN } }),
    m('GET /current-identity', 'happy', { expect: 200 }),
    c('GET /current-identity', 'happy', { as: 'adminClient', expect: 200 }),
    c('GET /controllers', 'happy', { as: 'adminClient', expect: 200 }),
    m('GET /controllers', 'happy', { expect: 200 }),

    // --- identities (auth) ---
    m('POST /identities', 'happy', {
      body: identity('d-alice', { roleAttributes: ['eng', 'red'], enrollment: { ott: true }, tags: { team: 'a' } }),
      save: { alice: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{alice}', 'happy', { save: { aliceOtt: 'data.enrollment.ott.token' }, expect: 200 }),
    m('POST /identities', 'updb-enrollment', {
      body: identity('d-bob', { roleAttributes: ['eng', 'blue'], enrollment: { updb: 'd-bob' } }),
      save: { bob: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{bob}', 'updb-enrollment', { save: { bobUpdb: 'data.enrollment.updb.token' }, expect: 200 }),
    m('POST /identities', 'device', {
      body: identity('d-carol', {
        type: 'Device',
        roleAttributes: ['ops'],
        externalId: 'ext-carol',
        defaultHostingCost: 5,
        defaultHostingPrecedence: 'required',
        serviceHostingCosts: {},
        appData: { k: 'v' },
      }),
      save: { carol: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{carol}', 'device', { expect: 200 }),
    m('POST /identities', 'admin', {
      body: identity('d-dave', { isAdmin: true }),
      save: { dave: 'data.id' },
      expect: 201,
    }),
    m('POST /identities', 'service-type', {
      body: identity('d-svcid', { type: 'Service' }),
      save: { svcIdent: 'data.id' },
      expect: 201,
    }),
    m('POST /identities', 'user', {
      body: identity('d-user', { roleAttributes: ['eng', 'red'] }),
      save: { userIdent: 'data.id' },
      expect: 201,
    }),
    m('POST /identities', 'mfa-user', {
      body: identity('d-mfa', { roleAttributes: ['eng'] }),
      save: { mfaIdent: 'data.id' },
      expect: 201,
    }),
    m('POST /identities', 'mfa-user-2', { body: identity('d-mfa2'), save: { mfaIdent2: 'data.id' }, expect: 201 }),
    m('POST /identities', 'temp', { body: identity('d-temp'), save: { temp: 'data.id' }, expect: 201 }),
    m('POST /identities', 'external-id', {
      body: identity('d-frank', { externalId: 'ext-frank', roleAttributes: ['ops'] }),
      save: { frank: 'data.id' },
      expect: 201,
    }),
    m('POST /identities', 'ott-for-enroll-ott', {
      body: identity('d-gina', { enrollment: { ott: true } }),
      save: { gina: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{gina}', 'ott-for-enroll-ott', { save: { ginaOtt: 'data.enrollment.ott.token' } }),
    m('POST /identities', 'updb-for-enroll-updb', {
      body: identity('d-hank', { enrollment: { updb: 'd-hank' } }),
      save: { hank: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{hank}', 'updb-for-enroll-updb', { save: { hankUpdb: 'data.enrollment.updb.token' } }),
    m('POST /identities', 'cert-user', { body: identity('d-kate'), save: { kate: 'data.id' }, expect: 201 }),
    m('POST /identities', 'updb-short-password', {
      body: identity('d-jane', { enrollment: { updb: 'd-jane' } }),
      save: { jane: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{jane}', 'updb-short-password', { save: { janeUpdb: 'data.enrollment.updb.token' } }),
    m('POST /identities', 'duplicate-username', { body: identity('d-ivan'), save: { ivan: 'data.id' }, expect: 201 }),
    m('POST /identities', 'missing-name', { body: { type: 'User', isAdmin: false }, expect: 400 }),
    m('POST /identities', 'missing-type', { body: { name: 'd-x0a', isAdmin: false }, expect: 400 }),
    m('POST /identities', 'missing-isAdmin', { body: { name: 'd-x0b', type: 'User' }, expect: 400 }),
    m('POST /identities', 'bad-type', { body: identity('d-x1', { type: 'Bogus' }), expect: 400 }),
    m('POST /identities', 'name-number', { body: identity('d-x3', { name: 42 }), expect: 400 }),
    m('POST /identities', 'isAdmin-string', { body: identity('d-x4', { isAdmin: 'yes' }), expect: 400 }),
    m('POST /identities', 'bad-role-attribute', { body: identity('d-x5', { roleAttributes: ['#bad'] }) }),
    m('POST /identities', 'roleAttributes-string', { body: identity('d-x6', { roleAttributes: 'eng' }), expect: 400 }),
    m('POST /identities', 'duplicate-name', { body: identity('d-alice') }),
    m('POST /identities', 'empty-name', { body: identity('') }),
    m('POST /identities', 'unknown-auth-policy', { body: identity('d-x7', { authPolicyId: 'nope' }) }),
    m('POST /identities', 'unknown-ottca', { body: identity('d-x8', { enrollment: { ottca: 'nope' } }) }),
    m('POST /identities', 'bad-precedence', { body: identity('d-x9', { defaultHostingPrecedence: 'bogus' }) }),
    m('POST /identities', 'cost-out-of-range', { body: identity('d-x10', { defaultHostingCost: 70000 }) }),
    m('POST /identities', 'unparsable', { raw: '{"name": "d-x",' }),
    m('POST /identities', 'array-body', { body: [] }),
    m('GET /identities', 'happy', { query: { sort: 'name' }, expect: 200 }),
    m('GET /identities', 'filter-name', { query: { filter: 'name="d-alice"' } }),
    m('GET /identities', 'filter-contains-sorted', { query: { filter: 'name contains "d-" sort by name' } }),
    m('GET /identities', 'filter-icontains', { query: { filter: 'name icontains "D-A"' } }),
    m('GET /identities', 'filter-anyOf', { query: { filter: 'anyOf(roleAttributes) = "eng"' } }),
    m('GET /identities', 'filter-allOf', {
      query: { filter: 'allOf(roleAttributes) in ["eng", "red"]', sort: 'name' },
    }),
    m('GET /identities', 'filter-isAdmin', { query: { filter: 'isAdmin = true' } }),
    m('GET /identities', 'filter-in', { query: { filter: 'id in ["{alice}", "{bob}"]' } }),
    m('GET /identities', 'filter-type', { query: { filter: 'type = "Default"', sort: 'name' } }),
    m('GET /identities', 'filter-tags', { query: { filter: 'tags.team = "a"' } }),
    m('GET /identities', 'filter-null', { query: { filter: 'externalId != null' } }),
    m('GET /identities', 'filter-datetime', {
      query: { filter: 'createdAt > datetime(2020-01-01T00:00:00Z)', sort: 'name' },
    }),
    m('GET /identities', 'filter-not', { query: { filter: 'not (name contains "d-")' } }),
    m('GET /identities', 'filter-set-bare', { query: { filter: 'roleAttributes = "eng"' } }),
    m('GET /identities', 'filter-scalar-in-set-function', { query: { filter: 'anyOf(name) = "x"' } }),
    m('GET /identities', 'filter-limit-inside', { query: { filter: 'true sort by name limit 2', limit: '5' } }),
    m('GET /identities', 'filter-limit-none', { query: { filter: 'true sort by name limit none' } }),
    m('GET /identities', 'filter-skip', { query: { filter: 'true sort by name skip 2 limit 3' } }),
    m('GET /identities', 'filter-is-empty', { query: { filter: 'isEmpty(roleAttributes)', sort: 'name' } }),
    m('GET /identities', 'filter-subquery', {
      query: { filter: 'not isEmpty(from servicePolicies where type = 1)' },
    }),
    m('GET /identities', 'filter-unterminated-string', { query: { filter: 'name = "x' } }),
    m('GET /identities', 'role-allof', { query: { roleFilter: ['#eng', '#red'] } }),
    m('GET /identities', 'role-anyof', { query: { roleFilter: ['#red', '#blue'], roleSemantic: 'AnyOf' } }),
    m('GET /identities', 'role-id', { query: { roleFilter: ['@{carol}', '#blue'], roleSemantic: 'AnyOf' } }),
    m('GET /identities', 'role-all-literal', { query: { roleFilter: ['#all'] } }),
    m('GET /identities', 'role-with-filter', { query: { roleFilter: ['#eng'], filter: 'name = "d-bob"' } }),
    m('GET /identities', 'role-bad-semantic', { query: { roleFilter: ['#eng'], roleSemantic: 'Bogus' } }),
    m('GET /identities', 'role-bad-entry', { query: { roleFilter: ['eng'] } }),
    m('GET /identities', 'sort-multi', { query: { sort: 'isAdmin desc, name asc' } }),
    m('GET /identities', 'sort-bad-direction', { query: { sort: 'name sideways' } }),
    m('GET /identities', 'limit-huge', { query: { limit: '100000', sort: 'name' } }),
    m('GET /identities', 'limit-negative', { query: { limit: '-5', sort: 'name' } }),
    m('GET /identities', 'offset-beyond', { query: { offset: '1000', sort: 'name' } }),
    m('GET /identities/{adminId}', 'default-admin', { expect: 200 }),
    m('PUT /identities/{carol}', 'happy', {
      body: identity('d-carol', {
        type: 'Device',
        roleAttributes: ['ops', 'blue'],
        externalId: 'ext-carol',
        tags: { x: '1' },
      }),
      expect: 200,
    }),
    m('GET /identities/{carol}', 'after-put'),
    m('PUT /identities/{carol}', 'missing-isAdmin', { body: { name: 'd-carol', type: 'User' } }),
    m('PUT /identities/{carol}', 'duplicate-name', { body: identity('d-alice') }),
    m('PATCH /identities/{alice}', 'happy', {
      body: { roleAttributes: ['eng', 'red', 'green'], tags: { team: 'b' } },
      expect: 200,
    }),
    m('GET /identities/{alice}', 'after-patch'),
    m('PATCH /identities/{alice}', 'duplicate-name', { body: { name: 'd-bob' } }),
    m('PATCH /identities/{carol}', 'externalId-null', { body: { externalId: null } }),
    m('GET /identities/{carol}', 'after-externalId-null'),
    m('PATCH /identities/{carol}', 'roleAttributes-null', { body: { roleAttributes: null } }),
    m('GET /identities/{carol}', 'after-roleAttributes-null'),
    m('PATCH /identities/{carol}', 'restore-roles', { body: { roleAttributes: ['ops', 'blue'] } }),
    m('PATCH /identities/{carol}', 'hosting', {
      body: { serviceHostingCosts: { nope: 3 }, serviceHostingPrecedences: { nope: 'failed' } },
    }),
    m('PATCH /identities/{carol}', 'unknown-field', { body: { bogus: 1 } }),
    m('POST /identities/{bob}/disable', 'happy', { body: { durationMinutes: 0 }, expect: 200 }),
    m('GET /identities/{bob}', 'disabled'),
    m('POST /identities/{bob}/disable', 'missing-duration', { body: {} }),
    m('POST /identities/{bob}/disable', 'timed', { body: { durationMinutes: 60 } }),
    m('GET /identities/{bob}', 'disabled-timed'),
    m('POST /identities/{bob}/enable', 'happy', { expect: 200 }),
    m('GET /identities/{bob}', 'enabled'),
    m('PUT /identities/{carol}/trace', 'happy', {
      body: { enabled: true, duration: '5m', traceId: 't1', channels: ['edge'] },
    }),
    m('PUT /identities/{carol}/trace', 'bad-duration', { body: { enabled: true, duration: 'soon' } }),
    m('GET /identities/{alice}/authenticators', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/enrollments', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/failed-service-requests', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/posture-data', 'happy', { expect: 200 }),
    m('DELETE /identities/{alice}/mfa', 'not-enrolled'),
    m('GET /identity-types', 'happy', { expect: 200 }),
    m('GET /identity-types/Default', 'happy', { expect: 200 }),
    m('GET /identity-types/User', 'legacy-type'),
    m('GET /identity-types/Router', 'router-type'),
    m('GET /identity-role-attributes', 'happy', { expect: 200 }),
    m('GET /identity-role-attributes', 'filter', { query: { filter: 'id contains "e" sort by id' } }),
    m('GET /identity-role-attributes', 'limit-param', { query: { limit: '1' } }),

    // --- authenticators (auth) ---
    m('POST /authenticators', 'happy', {
      body: { method: 'updb', identityId: '{userIdent}', username: 'd-user', password: 'd-user-pw-1' },
      save: { userAuth: 'data.id' },
      expect: 201,
    }),
    m('POST /authenticators', 'mfa-user', {
      body: { method: 'updb', identityId: '{mfaIdent}', username: 'd-mfa', password: 'd-mfa-pw-1' },
      expect: 201,
    }),
    m('POST /authenticators', 'mfa-user-2', {
      body: { method: 'updb', identityId: '{mfaIdent2}', username: 'd-mfa2', password: 'd-mfa2-pw-1' },
      expect: 201,
    }),
    m('POST /authenticators', 'temp', {
      body: { method: 'updb', identityId: '{temp}', username: 'd-temp', password: 'd-temp-pw-1' },
      save: { tempAuth: 'data.id' },
      expect: 201,
    }),
    m('POST /authenticators', 'frank', {
      body: { method: 'updb', identityId: '{frank}', username: 'd-frank', password: 'd-frank-pw-1' },
      save: { frankAuth: 'data.id' },
      expect: 201,
    }),
    m('POST /authenticators', 'svc', {
      body: { method: 'updb', identityId: '{svcIdent}', username: 'd-svc', password: 'd-svc-pw-1' },
      save: { svcAuth: 'data.id' },
      expect: 201,
    }),
    m('POST /authenticators', 'duplicate-method', {
      body: { method: 'updb', identityId: '{userIdent}', username: 'd-user-2', password: 'd-user-pw-x' },
    }),
    m('POST /authenticators', 'unknown-identity', {
      body: { method: 'updb', identityId: 'nope', username: 'd-nope', password: 'd-nope-pw' },
    }),
    m('POST /authenticators', 'missing-method', { body: { identityId: '{carol}', username: 'x', password: 'y' } }),
    m('POST /authenticators', 'bad-method', { body: { method: 'bogus', identityId: '{carol}' } }),
    m('POST /authenticators', 'cert-bad-pem', { body: { method: 'cert', identityId: '{carol}', certPem: 'nope' } }),
    m('POST /authenticators', 'missing-password', {
      body: { method: 'updb', identityId: '{carol}', username: 'd-carol-u' },
    }),
    m('GET /authenticators', 'happy', { expect: 200 }),
    m('GET /authenticators', 'filter-method', { query: { filter: 'method = "updb" sort by updbUsername' } }),
    m('GET /authenticators', 'filter-identity', { query: { filter: 'identity = "{userIdent}"' } }),
    m('GET /authenticators/{userAuth}', 'happy', { expect: 200 }),
    m('PUT /authenticators/{tempAuth}', 'happy', {
      body: { username: 'd-temp', password: 'd-temp-pw-2', tags: {} },
      expect: 200,
    }),
    m('PUT /authenticators/{tempAuth}', 'missing-password', { body: { username: 'd-temp' } }),
    m('PATCH /authenticators/{tempAuth}', 'happy', { body: { password: 'd-temp-pw-3' }, expect: 200 }),
    m('PATCH /authenticators/{tempAuth}', 'short-password', { body: { password: 'ab' } }),
    m('GET /authenticators/{tempAuth}', 'after-patch'),
    m('POST /authenticate', 'non-admin', {
      ...pw('d-user', 'd-user-pw-1'),
      save: { user: 'data.token', userSession: 'data.id' },
      expect: 200,
    }),
    m('POST /authenticate', 'temp', { ...pw('d-temp', 'd-temp-pw-3'), save: { tempToken: 'data.token' }, expect: 200 }),
    m('POST /authenticate', 'frank', {
      ...pw('d-frank', 'd-frank-pw-1'),
      save: { frankToken: 'data.token' },
      expect: 200,
    }),
    m('POST /authenticate', 'svc', {
      ...pw('d-svc', 'd-svc-pw-1'),
      save: { svcToken: 'data.token', svcSession: 'data.id' },
      expect: 200,
    }),
    m('GET /current-api-session', 'non-admin', { as: 'user', expect: 200 }),
    c('GET /current-identity', 'non-admin', { as: 'user', expect: 200 }),
    c('GET /current-identity/authenticators', 'happy', { as: 'user', expect: 200 }),
    m('GET /current-identity/authenticators', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-identity/authenticators/{userAuth}', 'happy', { as: 'user', expect: 200 }),
    m('GET /current-identity/authenticators/{userAuth}', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-identity/authenticators/{adminAuth}', 'other-identity', { as: 'user' }),
    c('PUT /current-identity/authenticators/{userAuth}', 'wrong-current', {
      as: 'user',
      body: { username: 'd-user', password: 'd-user-pw-2', currentPassword: 'wrong-pw' },
    }),
    c('PUT /current-identity/authenticators/{userAuth}', 'missing-current', {
      as: 'user',
      body: { username: 'd-user', password: 'd-user-pw-2' },
    }),
    c('PUT /current-identity/authenticators/{userAuth}', 'happy', {
      as: 'user',
      body: { username: 'd-user', password: 'd-user-pw-2', currentPassword: 'd-user-pw-1' },
      expect: 200,
    }),
    c('PATCH /current-identity/authenticators/{userAuth}', 'happy', {
      as: 'user',
      body: { password: 'd-user-pw-3', currentPassword: 'd-user-pw-2' },
      expect: 200,
    }),
    m('PUT /current-identity/authenticators/{userAuth}', 'happy', {
      as: 'user',
      body: { username: 'd-user', password: 'd-user-pw-4', currentPassword: 'd-user-pw-3' },
      expect: 200,
    }),
    m('PATCH /current-identity/authenticators/{userAuth}', 'happy', {
      as: 'user',
      body: { password: 'd-user-pw-5', currentPassword: 'd-user-pw-4' },
      expect: 200,
    }),
    c('PATCH /current-identity/authenticators/{adminAuth}', 'other-identity', {
      as: 'user',
      body: { password: 'd-user-pw-6', currentPassword: 'd-user-pw-5' },
    }),
    c('GET /current-api-session', 'after-password-change', { as: 'user' }),
    m('POST /authenticate', 'old-password', pw('d-user', 'd-user-pw-1')),
    m('POST /authenticate', 'new-password', { ...pw('d-user', 'd-user-pw-5'), expect: 200 }),

    // --- auth policies (auth) ---
    m('GET /auth-policies', 'happy', { expect: 200 }),
    m('GET /auth-policies/default', 'happy', { expect: 200 }),
    m('POST /auth-policies', 'happy', {
      body: authPolicyBody({ name: 'd-policy' }),
      save: { authPolicy: 'data.id' },
      expect: 201,
    }),
    m('POST /auth-policies', 'totp', {
      body: authPolicyBody({ name: 'd-totp-policy', secondary: { requireTotp: true } }),
      save: { totpPolicy: 'data.id' },
      expect: 201,
    }),
    m('POST /auth-policies', 'missing-primary', { body: { name: 'd-p2', secondary: { requireTotp: false } } }),
    m('POST /auth-policies', 'duplicate-name', { body: authPolicyBody({ name: 'd-policy' }) }),
    m('POST /auth-policies', 'unknown-signer', {
      body: authPolicyBody({ name: 'd-p3', extJwt: { allowedSigners: ['nope'] } }),
    }),
    m('POST /auth-policies', 'unknown-secondary-signer', {
      body: authPolicyBody({ name: 'd-p4', secondary: { requireExtJwtSigner: 'nope' } }),
    }),
    m('POST /auth-policies', 'negative-length', {
      body: authPolicyBody({ name: 'd-p5', updb: { minPasswordLength: -1 } }),
    }),
    m('GET /auth-policies/{authPolicy}', 'happy', { expect: 200 }),
    m('PUT /auth-policies/{authPolicy}', 'happy', {
      body: authPolicyBody({ name: 'd-policy', updb: { minPasswordLength: 8 } }),
      expect: 200,
    }),
    m('PUT /auth-policies/{authPolicy}', 'missing-secondary', {
      body: { name: 'd-policy', primary: authPolicyBody().primary },
    }),
    m('PATCH /auth-policies/{authPolicy}', 'happy', { body: { primary: { updb: { maxAttempts: 3 } } }, expect: 200 }),
    m('GET /auth-policies/{authPolicy}', 'after-patch'),
    m('PATCH /auth-policies/default', 'default', { body: { tags: { a: 'b' } } }),
    m('DELETE /auth-policies/default', 'system'),
    m('POST /identities', 'with-auth-policy', {
      body: identity('d-erin', { authPolicyId: '{authPolicy}' }),
      save: { erin: 'data.id' },
      expect: 201,
    }),
    m('GET /identities/{erin}', 'with-auth-policy'),
    m('POST /authenticators', 'erin', {
      body: { method: 'updb', identityId: '{erin}', username: 'd-erin', password: 'd-erin-pw-1' },
      save: { erinAuth: 'data.id' },
      expect: 201,
    }),
    m('POST /authenticate', 'erin', { ...pw('d-erin', 'd-erin-pw-1'), save: { erinToken: 'data.token' }, expect: 200 }),
    m('DELETE /auth-policies/{authPolicy}', 'in-use'),

    // --- external JWT signers (auth) ---
    m('POST /external-jwt-signers', 'happy', { body: signer(x), save: { signer: 'data.id' }, expect: 201 }),
    m('POST /external-jwt-signers', 'jwks', {
      body: {
        name: 'd-signer-jwks',
        enabled: true,
        issuer: 'https://diff-jwks.example',
        audience: 'diff-audience',
        jwksEndpoint: 'https://127.0.0.1:9/jwks',
      },
      save: { signerJwks: 'data.id' },
      expect: 201,
    }),
    m('POST /external-jwt-signers', 'missing-key-source', {
      body: { name: 'd-s3', enabled: true, issuer: 'https://s3.example', audience: 'a' },
    }),
    m('POST /external-jwt-signers', 'both-key-sources', {
      body: signer(x, { name: 'd-s4', issuer: 'https://s4.example', jwksEndpoint: 'https://127.0.0.1:9/jwks' }),
    }),
    m('POST /external-jwt-signers', 'bad-cert', {
      body: signer(x, { name: 'd-s5', issuer: 'https://s5.example', certPem: 'nope' }),
    }),
    m('POST /external-jwt-signers', 'missing-kid', {
      body: signer(x, { name: 'd-s6', issuer: 'https://s6.example', kid: undefined }),
    }),
    m('POST /external-jwt-signers', 'duplicate-name', { body: signer(x, { issuer: 'https://s7.example', kid: 'k7' }) }),
    m('POST /external-jwt-signers', 'duplicate-issuer', { body: signer(x, { name: 'd-s8', kid: 'k8' }) }),
    m('POST /external-jwt-signers', 'bad-url', {
      body: { name: 'd-s9', enabled: true, issuer: 'https://s9.example', audience: 'a', jwksEndpoint: 'not a url' },
    }),
    m('POST /external-jwt-signers', 'missing-issuer', { body: { name: 'd-s10', enabled: true, audience: 'a' } }),
    m('GET /external-jwt-signers', 'happy', { expect: 200 }),
    m('GET /external-jwt-signers/{signer}', 'happy', { expect: 200 }),
    m('GET /external-jwt-signers/{signerJwks}', 'jwks'),
    c('GET /external-jwt-signers', 'with-signers', { as: 'none', expect: 200 }),
    m('PUT /external-jwt-signers/{signerJwks}', 'happy', {
      body: {
        name: 'd-signer-jwks',
        enabled: false,
        issuer: 'https://diff-jwks.example',
        audience: 'diff-audience-2',
        jwksEndpoint: 'https://127.0.0.1:9/jwks2',
      },
      expect: 200,
    }),
    m('PATCH /external-jwt-signers/{signerJwks}', 'happy', { body: { audience: 'diff-audience-3' }, expect: 200 }),
    m('GET /external-jwt-signers/{signerJwks}', 'after-patch'),
    m('POST /authenticate', 'ext-jwt', {
      as: 'none',
      query: { method: 'ext-jwt' },
      body: {},
      headers: { authorization: `Bearer ${x.extJwt}` },
      save: { frankJwtToken: 'data.token' },
    }),
    m('POST /authenticate', 'ext-jwt-wrong-audience', {
      as: 'none',
      query: { method: 'ext-jwt' },
      body: {},
      headers: { authorization: `Bearer ${x.extJwtWrongAudience}` },
    }),
    m('POST /authenticate', 'ext-jwt-garbage', {
      as: 'none',
      query: { method: 'ext-jwt' },
      body: {},
      headers: { authorization: 'Bearer not.a.jwt' },
    }),

    // --- MFA (auth) ---
    c('POST /authenticate', 'mfa-user', { ...pw('d-mfa', 'd-mfa-pw-1'), save: { mfa: 'data.token' }, expect: 200 }),
    c('GET /current-identity/mfa', 'not-enrolled', { as: 'mfa' }),
    c('GET /current-identity/mfa/qr-code', 'not-enrolled', { as: 'mfa' }),
    c('POST /current-identity/mfa/verify', 'not-enrolled', { as: 'mfa', body: { code: '123456' } }),
    c('DELETE /current-identity/mfa', 'not-enrolled', { as: 'mfa', headers: { 'mfa-validation-code': '123456' } }),
    c('POST /current-identity/mfa', 'happy', { as: 'mfa', expect: 201 }),
    c('POST /current-identity/mfa', 'exists', { as: 'mfa' }),
    c('GET /current-identity/mfa', 'unverified', { as: 'mfa', save: { mfaSecret: mfaSecret }, expect: 200 }),
    c('GET /current-identity/mfa/qr-code', 'happy', { as: 'mfa', compare: 'status', expect: 200 }),
    c('GET /current-identity/mfa/recovery-codes', 'unverified', { as: 'mfa', headers: codeHeader('mfaSecret') }),
    c('POST /current-identity/mfa/verify', 'wrong-code', { as: 'mfa', body: { code: '000000' } }),
    c('POST /current-identity/mfa/verify', 'missing-code', { as: 'mfa', body: {} }),
    c('POST /current-identity/mfa/verify', 'happy', { as: 'mfa', body: code('mfaSecret'), expect: 200 }),
    c('POST /current-identity/mfa/verify', 'already-verified', { as: 'mfa', body: code('mfaSecret') }),
    c('GET /current-identity/mfa', 'verified', { as: 'mfa', expect: 200 }),
    m('GET /current-identity/mfa', 'verified', { as: 'mfa' }),
    c('GET /current-identity/mfa/qr-code', 'verified', { as: 'mfa', compare: 'status' }),
    c('GET /current-identity/mfa/recovery-codes', 'happy', {
      as: 'mfa',
      headers: codeHeader('mfaSecret'),
      expect: 200,
    }),
    c('GET /current-identity/mfa/recovery-codes', 'wrong-code', {
      as: 'mfa',
      headers: { 'mfa-validation-code': '000000' },
    }),
    c('GET /current-identity/mfa/recovery-codes', 'no-code', { as: 'mfa' }),
    c('POST /current-identity/mfa/recovery-codes', 'happy', {
      as: 'mfa',
      body: code('mfaSecret'),
      expect: 200,
    }),
    c('POST /current-identity/mfa/recovery-codes', 'wrong-code', { as: 'mfa', body: { code: '000000' } }),
    c('GET /current-identity/mfa/recovery-codes', 'after-regenerate', {
      as: 'mfa',
      headers: codeHeader('mfaSecret'),
      save: { mfaRecovery: 'data.recoveryCodes.0' },
    }),
    m('GET /identities/{mfaIdent}', 'mfa-enabled'),
    c('POST /authenticate', 'mfa-pending', {
      ...pw('d-mfa', 'd-mfa-pw-1'),
      save: { mfaPending: 'data.token' },
      expect: 200,
    }),
    c('GET /current-api-session', 'mfa-pending', { as: 'mfaPending' }),
    c('GET /current-identity', 'mfa-pending', { as: 'mfaPending' }),
    c('GET /current-identity/mfa', 'mfa-pending', { as: 'mfaPending' }),
    c('POST /authenticate', 'mfa-login', {
      ...pw('d-mfa', 'd-mfa-pw-1'),
      save: { mfaDone: 'data.token' },
      expect: 200,
    }),
    c('POST /authenticate/mfa', 'wrong-code', { as: 'mfaDone', body: { code: '000000' } }),
    c('POST /authenticate/mfa', 'missing-code', { as: 'mfaDone', body: {} }),
    c('POST /authenticate/mfa', 'happy', { as: 'mfaDone', body: code('mfaSecret'), expect: 200 }),
    c('GET /current-api-session', 'mfa-complete', { as: 'mfaDone' }),
    c('POST /authenticate/mfa', 'already-complete', { as: 'mfaDone', body: code('mfaSecret') }),
    c('POST /authenticate/mfa', 'not-enrolled', { as: 'user', body: { code: '123456' } }),
    m('POST /authenticate', 'mfa-recovery-login', {
      ...pw('d-mfa', 'd-mfa-pw-1'),
      save: { mfaRecovered: 'data.token' },
    }),
    m('POST /authenticate/mfa', 'recovery-code', { as: 'mfaRecovered', body: { code: '{mfaRecovery}' } }),
    m('POST /authenticate/mfa', 'recovery-code-reused', { as: 'mfaRecovered', body: { code: '{mfaRecovery}' } }),
    m('GET /current-api-session', 'mfa-recovered', { as: 'mfaRecovered' }),
    m('POST /authenticate', 'mfa-user-2', {
      ...pw('d-mfa2', 'd-mfa2-pw-1'),
      save: { mfa2: 'data.token' },
      expect: 200,
    }),
    m('POST /current-identity/mfa', 'happy', { as: 'mfa2', expect: 201 }),
    m('GET /current-identity/mfa', 'unverified', { as: 'mfa2', save: { mfa2Secret: mfaSecret } }),
    m('GET /current-identity/mfa/qr-code', 'happy', { as: 'mfa2', compare: 'status' }),
    m('POST /current-identity/mfa/verify', 'happy', { as: 'mfa2', body: code('mfa2Secret'), expect: 200 }),
    m('GET /current-identity/mfa/recovery-codes', 'happy', { as: 'mfa2', headers: codeHeader('mfa2Secret') }),
    m('POST /current-identity/mfa/recovery-codes', 'happy', { as: 'mfa2', body: code('mfa2Secret') }),
    m('DELETE /current-identity/mfa', 'wrong-code', { as: 'mfa2', headers: { 'mfa-validation-code': '000000' } }),
    m('DELETE /current-identity/mfa', 'happy', { as: 'mfa2', headers: codeHeader('mfa2Secret'), expect: 200 }),
    m('GET /current-identity/mfa', 'after-delete', { as: 'mfa2' }),
    c('POST /current-identity/mfa', 'again', { as: 'mfa2', expect: 201 }),
    c('GET /current-identity/mfa', 'again', { as: 'mfa2', save: { mfa2Secret: mfaSecret } }),
    c('POST /current-identity/mfa/verify', 'again', { as: 'mfa2', body: code('mfa2Secret') }),
    c('DELETE /current-identity/mfa', 'happy', { as: 'mfa2', headers: codeHeader('mfa2Secret') }),
    m('DELETE /identities/{mfaIdent2}/mfa', 'after-self-delete'),

    // --- CAs (pki-enrollment) ---
    m('POST /cas', 'happy', { body: caBody(x.ca), save: { ca: 'data.id' }, expect: 201 }),
    m('GET /cas/{ca}', 'happy', { save: { caToken: 'data.verificationToken' }, expect: 200 }),
    m('GET /cas', 'happy', { expect: 200 }),
    m('GET /cas/{ca}/jwt', 'happy', { expect: 200 }),
    m('POST /cas/{ca}/verify', 'wrong-cn', {
      raw: () => verificationCertificate(x.ca, 'not-the-token'),
      contentType: 'text/plain',
    }),
    m('POST /cas/{ca}/verify', 'other-ca', {
      raw: (v) => verificationCertificate(x.ca2, String(v.get('caToken'))),
      contentType: 'text/plain',
    }),
    m('POST /cas/{ca}/verify', 'not-pem', { raw: 'nope', contentType: 'text/plain' }),
    m('POST /cas/{ca}/verify', 'happy', {
      raw: (v) => verificationCertificate(x.ca, String(v.get('caToken'))),
      contentType: 'text/plain',
      expect: 200,
    }),
    m('POST /cas/{ca}/verify', 'already-verified', {
      raw: (v) => verificationCertificate(x.ca, String(v.get('caToken'))),
      contentType: 'text/plain',
    }),
    m('GET /cas/{ca}', 'verified'),
    m('POST /authenticators', 'cert', {
      body: { method: 'cert', identityId: '{kate}', certPem: x.rootSignedPem },
      save: { kateCertAuth: 'data.id' },
      expect: 201,
    }),
    m('GET /authenticators/{kateCertAuth}', 'cert'),
    m('PUT /authenticators/{kateCertAuth}', 'cert-authenticator', {
      body: { username: 'd-kate', password: 'd-kate-pw-1' },
    }),
    m('PATCH /authenticators/{kateCertAuth}', 'cert-authenticator', { body: { password: 'd-kate-pw-1' } }),
    m('POST /cas', 'second', {
      body: caBody(x.ca2, { name: 'd-ca2', isAutoCaEnrollmentEnabled: false, identityRoles: [] }),
      save: { ca2: 'data.id' },
      expect: 201,
    }),
    m('POST /cas', 'duplicate-name', { body: caBody(x.ca3) }),
    m('POST /cas', 'duplicate-cert', { body: caBody(x.ca, { name: 'd-ca-dup' }) }),
    m('POST /cas', 'not-a-ca', { body: caBody(x.ca3, { name: 'd-ca-leaf', certPem: x.leafPem }) }),
    m('POST /cas', 'bad-pem', { body: caBody(x.ca3, { name: 'd-ca-bad', certPem: 'nope' }) }),
    m('POST /cas', 'missing-fields', { body: { name: 'd-ca-x' } }),
    m('GET /cas/{ca2}/jwt', 'auto-enrollment-off'),
    m('PUT /cas/{ca2}', 'happy', {
      body: {
        name: 'd-ca2',
        isAutoCaEnrollmentEnabled: false,
        isOttCaEnrollmentEnabled: false,
        isAuthEnabled: false,
        identityRoles: [],
        identityNameFormat: '',
        tags: {},
      },
      expect: 200,
    }),
    m('PATCH /cas/{ca2}', 'happy', { body: { name: 'd-ca2-renamed', isAuthEnabled: true }, expect: 200 }),
    m('PATCH /cas/{ca2}', 'external-id-claim', {
      body: {
        externalIdClaim: {
          location: 'COMMON_NAME',
          matcher: 'ALL',
          matcherCriteria: '',
          parser: 'NONE',
          parserCriteria: '',
          index: 0,
        },
      },
    }),
    m('PATCH /cas/{ca2}', 'bad-external-id-claim', { body: { externalIdClaim: { location: 'NOWHERE' } } }),
    m('GET /cas/{ca2}', 'after-patch'),
    m('GET /cas', 'filter-verified', { query: { filter: 'isVerified = true' } }),

    // --- enrollments (pki-enrollment) ---
    m('POST /enrollments', 'happy', {
      body: { method: 'ott', identityId: '{carol}', expiresAt: at(2) },
      save: { carolEnrollment: 'data.id' },
      expect: 201,
    }),
    m('POST /enrollments', 'exists', { body: { method: 'ott', identityId: '{carol}', expiresAt: at(2) } }),
    m('POST /enrollments', 'unknown-identity', { body: { method: 'ott', identityId: 'nope', expiresAt: at(2) } }),
    m('POST /enrollments', 'ottca', {
      body: { method: 'ottca', identityId: '{dave}', caId: '{ca}', expiresAt: at(2) },
      save: { daveEnrollment: 'data.id' },
      expect: 201,
    }),
    m('POST /enrollments', 'ottca-missing-ca', { body: { method: 'ottca', identityId: '{erin}', expiresAt: at(2) } }),
    m('POST /enrollments', 'ottca-unknown-ca', {
      body: { method: 'ottca', identityId: '{erin}', caId: 'nope', expiresAt: at(2) },
    }),
    m('POST /enrollments', 'updb', {
      body: { method: 'updb', identityId: '{svcIdent}', username: 'd-svc-2', expiresAt: at(2) },
      save: { svcEnrollment: 'data.id' },
    }),
    m('POST /enrollments', 'updb-missing-username', {
      body: { method: 'updb', identityId: '{frank}', expiresAt: at(2) },
    }),
    m('POST /enrollments', 'past-expiry', {
      body: { method: 'ott', identityId: '{frank}', expiresAt: '2020-01-01T00:00:00Z' },
    }),
    m('POST /enrollments', 'bad-method', { body: { method: 'bogus', identityId: '{frank}', expiresAt: at(2) } }),
    m('POST /enrollments', 'bad-date', { body: { method: 'ott', identityId: '{frank}', expiresAt: 'tomorrow' } }),
    m('GET /enrollments', 'happy', { expect: 200 }),
    m('GET /enrollments/{carolEnrollment}', 'happy', { save: { carolOtt: 'data.token' }, expect: 200 }),
    m('GET /enrollments/{daveEnrollment}', 'ottca', { save: { daveOttca: 'data.token' } }),
    m('GET /enrollments', 'filter-identity', { query: { filter: 'identity = "{carol}"' } }),
    m('GET /enrollments', 'filter-method', { query: { filter: 'method = "ott"' } }),
    m('POST /enrollments/{carolEnrollment}/refresh', 'happy', { body: { expiresAt: at(3) }, expect: 200 }),
    m('POST /enrollments/{carolEnrollment}/refresh', 'past', { body: { expiresAt: '2020-01-01T00:00:00Z' } }),
    m('POST /enrollments/{carolEnrollment}/refresh', 'missing-expiry', { body: {} }),
    m('GET /enrollments/{carolEnrollment}', 'after-refresh', { save: { carolOtt: 'data.token' } }),
    m('GET /identities/{carol}/enrollments', 'after-refresh'),
    m('DELETE /enrollments/{svcEnrollment}', 'happy', { expect: 200 }),
    m('GET /identities/{svcIdent}/enrollments', 'after-delete'),

    // --- enrollment (pki-enrollment) ---
    c('POST /enroll', 'bad-csr', {
      as: 'none',
      query: { method: 'ott', token: '{aliceOtt}' },
      raw: 'not a csr',
      contentType: PEM,
    }),
    c('POST /enroll', 'happy', {
      as: 'none',
      query: { method: 'ott', token: '{aliceOtt}' },
      raw: x.csrs.alice.csrPem,
      contentType: PEM,
      save: { aliceCert: certPair(x.csrs.alice) },
      expect: 200,
    }),
    c('POST /enroll', 'used-token', {
      as: 'none',
      query: { method: 'ott', token: '{aliceOtt}' },
      raw: x.csrs.junk.csrPem,
      contentType: PEM,
    }),
    c('POST /enroll', 'unknown-token', {
      as: 'none',
      query: { method: 'ott', token: UNKNOWN_TOKEN },
      raw: x.csrs.junk.csrPem,
      contentType: PEM,
    }),
    c('POST /enroll', 'bad-content-type', {
      as: 'none',
      query: { method: 'ott', token: '{carolOtt}' },
      raw: x.csrs.carol.csrPem,
      contentType: 'application/xml',
    }),
    c('POST /enroll', 'wrong-method', {
      as: 'none',
      query: { method: 'updb', token: '{carolOtt}' },
      body: { password: 'd-carol-pw-1' },
    }),
    c('POST /enroll', 'accept-json', {
      as: 'none',
      query: { method: 'ott', token: '{carolOtt}' },
      raw: x.csrs.carol.csrPem,
      contentType: PEM,
      headers: { accept: 'application/json' },
      save: { carolCert: certPair(x.csrs.carol) },
      expect: 200,
    }),
    m('GET /identities/{carol}', 'after-enroll'),
    c('POST /enroll', 'updb-missing-password', { as: 'none', query: { method: 'updb', token: '{bobUpdb}' }, body: {} }),
    c('POST /enroll', 'updb', {
      as: 'none',
      query: { method: 'updb', token: '{bobUpdb}' },
      body: { password: 'd-bob-pw-1' },
      expect: 200,
    }),
    c('POST /enroll', 'updb-used-token', {
      as: 'none',
      query: { method: 'updb', token: '{bobUpdb}' },
      body: { password: 'd-bob-pw-1' },
    }),
    m('POST /authenticate', 'bob', {
      ...pw('d-bob', 'd-bob-pw-1'),
      save: { bobToken: 'data.token', bobSession: 'data.id' },
      expect: 200,
    }),
    c('POST /enroll/ottca', 'no-cert', { as: 'none', query: { token: '{daveOttca}' }, body: {} }),
    c('POST /enroll/ottca', 'wrong-ca', {
      as: 'none',
      query: { token: '{daveOttca}' },
      body: {},
      cert: 'strangerClient',
    }),
    c('POST /enroll/ottca', 'happy', {
      as: 'none',
      query: { token: '{daveOttca}' },
      body: {},
      cert: 'caClient1',
      expect: 200,
    }),
    m('GET /identities/{dave}', 'after-ottca'),
    c('POST /enroll/ca', 'no-cert', { as: 'none', query: { method: 'ca' }, body: {} }),
    c('POST /enroll/ca', 'unknown-ca', { as: 'none', query: { method: 'ca' }, body: {}, cert: 'strangerClient' }),
    c('POST /enroll/ca', 'happy', { as: 'none', query: { method: 'ca' }, body: {}, cert: 'caClient2', expect: 200 }),
    c('POST /enroll/ca', 'again', { as: 'none', query: { method: 'ca' }, body: {}, cert: 'caClient2' }),
    m('GET /identities', 'after-ca-enrollment', { query: { filter: 'name contains "diff-auto"' } }),
    c('POST /authenticate', 'cert', {
      as: 'none',
      query: { method: 'cert' },
      body: {},
      cert: 'aliceCert',
      save: { aliceSession: 'data.token' },
      expect: 200,
    }),
    c('POST /authenticate', 'cert-carol', {
      as: 'none',
      query: { method: 'cert' },
      body: {},
      cert: 'carolCert',
      save: { carolToken: 'data.token' },
    }),
    c('POST /authenticate', 'cert-third-party', { as: 'none', query: { method: 'cert' }, body: {}, cert: 'caClient2' }),
    c('GET /current-identity/authenticators', 'cert', {
      as: 'aliceSession',
      save: { aliceCertAuth: 'data.0.id' },
      expect: 200,
    }),
    c('POST /current-identity/authenticators/{aliceCertAuth}/extend', 'bad-csr', {
      as: 'aliceSession',
      cert: 'aliceCert',
      body: { clientCertCsr: 'nope' },
    }),
    c('POST /current-identity/authenticators/{aliceCertAuth}/extend', 'happy', {
      as: 'aliceSession',
      cert: 'aliceCert',
      body: { clientCertCsr: x.csrs.alice2.csrPem },
      save: { aliceExtended: 'data.clientCert' },
      expect: 200,
    }),
    c('POST /current-identity/authenticators/{aliceCertAuth}/extend-verify', 'wrong-cert', {
      as: 'aliceSession',
      cert: 'aliceCert',
      body: { clientCert: x.leafPem },
    }),
    c('POST /current-identity/authenticators/{aliceCertAuth}/extend-verify', 'happy', {
      as: 'aliceSession',
      cert: 'aliceCert',
      body: { clientCert: '{aliceExtended}' },
      expect: 200,
    }),
    m('POST /current-identity/authenticators/{userAuth}/extend', 'updb-authenticator', {
      as: 'user',
      body: { clientCertCsr: x.csrs.junk.csrPem },
    }),
    m('POST /current-identity/authenticators/{userAuth}/extend-verify', 'updb-authenticator', {
      as: 'user',
      body: { clientCert: x.leafPem },
    }),
    c('POST /current-api-session/certificates', 'happy', {
      as: 'user',
      body: { csr: x.csrs.session.csrPem },
      save: { sessionCert: 'data.id' },
      expect: 201,
    }),
    c('POST /current-api-session/certificates', 'bad-csr', { as: 'user', body: { csr: 'nope' } }),
    c('POST /current-api-session/certificates', 'missing-csr', { as: 'user', body: {} }),
    c('GET /current-api-session/certificates', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-api-session/certificates/{sessionCert}', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-api-session/certificates/{sessionCert}', 'other-session', { as: 'adminClient' }),
    c('DELETE /current-api-session/certificates/{sessionCert}', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-api-session/certificates', 'after-delete', { as: 'user' }),

    // --- config types, configs (inventory) ---
    m('GET /config-types', 'happy', { expect: 200 }),
    m('GET /config-types/g7cIWbcGg', 'builtin-intercept', { expect: 200 }),
    m('GET /config-types/NH5p4FpGR', 'builtin-host'),
    m('GET /config-types/host.v2', 'builtin-host-v2'),
    m('POST /config-types', 'happy', {
      body: {
        name: 'd-ct',
        schema: {
          type: 'object',
          properties: { port: { type: 'integer' } },
          required: ['port'],
          additionalProperties: false,
        },
        tags: {},
      },
      save: { ct: 'data.id' },
      expect: 201,
    }),
    m('POST /config-types', 'no-schema', { body: { name: 'd-ct2' }, save: { ct2: 'data.id' }, expect: 201 }),
    m('POST /config-types', 'duplicate-name', { body: { name: 'd-ct' } }),
    m('POST /config-types', 'bad-schema', { body: { name: 'd-ct3', schema: { type: 'bogus' } } }),
    m('POST /config-types', 'missing-name', { body: { schema: {} } }),
    m('GET /config-types/{ct}', 'happy', { expect: 200 }),
    m('PUT /config-types/{ct2}', 'happy', { body: { name: 'd-ct2', schema: { type: 'object' } }, expect: 200 }),
    m('PATCH /config-types/{ct2}', 'happy', { body: { name: 'd-ct2b', schema: { type: 'object' } }, expect: 200 }),
    m('GET /config-types/{ct2}', 'after-patch'),
    m('PATCH /config-types/{ct2}', 'without-schema', { body: { name: 'd-ct2c' } }),
    m('POST /configs', 'happy', {
      body: { name: 'd-host', configTypeId: 'NH5p4FpGR', data: hostData },
      save: { hostCfg: 'data.id' },
      expect: 201,
    }),
    m('POST /configs', 'intercept', {
      body: { name: 'd-intercept', configTypeId: 'g7cIWbcGg', data: interceptData },
      save: { interceptCfg: 'data.id' },
      expect: 201,
    }),
    m('POST /configs', 'intercept-override', {
      body: {
        name: 'd-intercept-2',
        configTypeId: 'g7cIWbcGg',
        data: { ...interceptData, addresses: ['d-other.example'] },
      },
      save: { interceptCfg2: 'data.id' },
      expect: 201,
    }),
    m('POST /configs', 'custom-type', {
      body: { name: 'd-custom', configTypeId: '{ct}', data: { port: 1 } },
      save: { customCfg: 'data.id' },
      expect: 201,
    }),
    m('POST /configs', 'temp', {
      body: { name: 'd-temp-cfg', configTypeId: '{ct}', data: { port: 9 } },
      save: { tempCfg: 'data.id' },
    }),
    m('POST /configs', 'schema-violation', { body: { name: 'd-bad', configTypeId: '{ct}', data: { port: 'x' } } }),
    m('POST /configs', 'schema-missing-required', { body: { name: 'd-bad2', configTypeId: '{ct}', data: {} } }),
    m('POST /configs', 'schema-extra-property', {
      body: { name: 'd-bad5', configTypeId: '{ct}', data: { port: 1, x: 1 } },
    }),
    m('POST /configs', 'builtin-schema-violation', {
      body: { name: 'd-bad6', configTypeId: 'g7cIWbcGg', data: { protocols: ['sctp'], addresses: [], portRanges: [] } },
    }),
    m('POST /configs', 'unknown-type', { body: { name: 'd-bad3', configTypeId: 'nope', data: {} } }),
    m('POST /configs', 'missing-data', { body: { name: 'd-bad4', configTypeId: '{ct}' } }),
    m('POST /configs', 'duplicate-name', { body: { name: 'd-host', configTypeId: 'NH5p4FpGR', data: hostData } }),
    m('GET /configs', 'happy', { expect: 200 }),
    m('GET /configs', 'filter-type', { query: { filter: 'type = "NH5p4FpGR"' } }),
    m('GET /configs', 'filter-data', { query: { filter: 'data.port = 8080' } }),
    m('GET /configs/{hostCfg}', 'happy', { expect: 200 }),
    m('GET /configs/{customCfg}', 'custom'),
    m('PUT /configs/{customCfg}', 'happy', { body: { name: 'd-custom', data: { port: 2 } }, expect: 200 }),
    m('PUT /configs/{customCfg}', 'schema-violation', { body: { name: 'd-custom', data: { port: 'x' } } }),
    m('PATCH /configs/{customCfg}', 'happy', { body: { data: { port: 3 } }, expect: 200 }),
    m('PATCH /configs/{customCfg}', 'change-type', { body: { configTypeId: 'NH5p4FpGR' } }),
    m('GET /configs/{customCfg}', 'after-patch'),
    m('GET /config-types/{ct}/configs', 'happy'),
    m('GET /config-types/NH5p4FpGR/configs', 'builtin'),
    m('DELETE /configs/{tempCfg}', 'happy', { expect: 200 }),

    // --- services (inventory, policy) ---
    m('POST /services', 'happy', {
      body: {
        name: 'd-web',
        encryptionRequired: true,
        roleAttributes: ['web', 'idle'],
        configs: ['{hostCfg}', '{interceptCfg}'],
        terminatorStrategy: 'smartrouting',
        tags: {},
      },
      save: { svc1: 'data.id' },
      expect: 201,
    }),
    m('POST /services', 'minimal', {
      body: { name: 'd-db', encryptionRequired: false },
      save: { svc2: 'data.id' },
      expect: 201,
    }),
    m('POST /services', 'max-idle', {
      body: { name: 'd-idle', encryptionRequired: true, maxIdleTimeMillis: 1000, roleAttributes: ['idle'] },
      save: { svc3: 'data.id' },
      expect: 201,
    }),
    m('POST /services', 'temp', {
      body: { name: 'd-temp-svc', encryptionRequired: true },
      save: { tempSvc: 'data.id' },
    }),
    m('POST /services', 'missing-encryption', { body: { name: 'd-x' } }),
    m('POST /services', 'unknown-config', { body: { name: 'd-x', encryptionRequired: true, configs: ['nope'] } }),
    m('POST /services', 'two-configs-of-a-type', {
      body: { name: 'd-x2', encryptionRequired: true, configs: ['{interceptCfg}', '{interceptCfg2}'] },
    }),
    m('POST /services', 'bad-strategy', {
      body: { name: 'd-x3', encryptionRequired: true, terminatorStrategy: 'bogus' },
    }),
    m('POST /services', 'duplicate-name', { body: { name: 'd-web', encryptionRequired: true } }),
    m('GET /services', 'happy', { expect: 200 }),
    m('GET /services', 'config-types', { query: { configTypes: 'all' } }),
    m('GET /services', 'config-types-names', { query: { configTypes: 'intercept.v1,host.v1' } }),
    m('GET /services', 'as-identity', { query: { asIdentity: '{userIdent}' } }),
    m('GET /services', 'role-filter', { query: { roleFilter: ['#web'] } }),
    m('GET /services', 'filter-configs', { query: { filter: 'anyOf(configs) = "{hostCfg}"' } }),
    m('GET /services/{svc1}', 'happy', { expect: 200 }),
    m('GET /services/{svc3}', 'max-idle'),
    m('PUT /services/{svc2}', 'happy', {
      body: {
        name: 'd-db',
        encryptionRequired: true,
        roleAttributes: ['db'],
        configs: [],
        terminatorStrategy: 'weighted',
      },
      expect: 200,
    }),
    m('PATCH /services/{svc2}', 'happy', { body: { roleAttributes: ['db', 'data'] }, expect: 200 }),
    m('PATCH /services/{svc2}', 'configs-null', { body: { configs: null } }),
    m('GET /services/{svc2}', 'after-patch'),
    m('GET /services/{svc1}/configs', 'happy', { expect: 200 }),
    m('GET /configs/{hostCfg}/services', 'happy', { expect: 200 }),

    // --- edge routers, routers, transit routers (inventory) ---
    m('POST /edge-routers', 'happy', {
      body: {
        name: 'd-er1',
        roleAttributes: ['public'],
        isTunnelerEnabled: false,
        cost: 10,
        noTraversal: false,
        disabled: false,
        appData: { k: 'v' },
      },
      save: { er1: 'data.id' },
      expect: 201,
    }),
    m('POST /edge-routers', 'tunneler', {
      body: { name: 'd-er2', roleAttributes: ['public', 'tun'], isTunnelerEnabled: true },
      save: { er2: 'data.id' },
      expect: 201,
    }),
    m('POST /edge-routers', 'minimal', { body: { name: 'd-er3' }, save: { er3: 'data.id' }, expect: 201 }),
    m('POST /edge-routers', 'cost-out-of-range', { body: { name: 'd-erx', cost: 70000 } }),
    m('POST /edge-routers', 'duplicate-name', { body: { name: 'd-er1' } }),
    m('POST /edge-routers', 'bad-role-attribute', { body: { name: 'd-ery', roleAttributes: ['@x'] } }),
    m('GET /edge-routers', 'happy', { expect: 200 }),
    m('GET /edge-routers', 'role-filter', { query: { roleFilter: ['#public'] } }),
    m('GET /edge-routers', 'role-anyof', { query: { roleFilter: ['#tun', '#private'], roleSemantic: 'AnyOf' } }),
    m('GET /edge-routers', 'filter-tunneler', { query: { filter: 'isTunnelerEnabled = true' } }),
    m('GET /edge-routers/{er1}', 'happy', { save: { er1Token: 'data.enrollmentToken' }, expect: 200 }),
    m('GET /edge-routers/{er2}', 'tunneler'),
    m('GET /identities/{er2}', 'router-identity'),
    m('GET /identities', 'filter-router-type', { query: { filter: 'type = "Router"' } }),
    m('GET /edge-router-policies/{er2}', 'system-policy'),
    m('PATCH /edge-router-policies/{er2}', 'system-policy', { body: { name: 'd-hijack' } }),
    m('DELETE /edge-router-policies/{er2}', 'system-policy'),
    m('DELETE /identities/{er2}', 'router-identity'),
    m('PATCH /identities/{er2}', 'router-identity', { body: { roleAttributes: ['x'] } }),
    m('PUT /edge-routers/{er3}', 'happy', {
      body: {
        name: 'd-er3',
        roleAttributes: ['private'],
        isTunnelerEnabled: false,
        cost: 5,
        noTraversal: true,
        disabled: false,
      },
      expect: 200,
    }),
    m('PATCH /edge-routers/{er3}', 'happy', { body: { cost: 7 }, expect: 200 }),
    m('PATCH /edge-routers/{er3}', 'enable-tunneler', { body: { isTunnelerEnabled: true } }),
    m('GET /identities/{er3}', 'after-enable-tunneler'),
    m('GET /edge-router-policies/{er3}', 'after-enable-tunneler'),
    m('PATCH /edge-routers/{er3}', 'rename', { body: { name: 'd-er3b' } }),
    m('GET /identities/{er3}', 'after-rename'),
    m('GET /edge-router-policies/{er3}', 'after-rename'),
    m('PATCH /edge-routers/{er3}', 'disable-tunneler', { body: { isTunnelerEnabled: false } }),
    m('GET /identities/{er3}', 'after-disable-tunneler'),
    m('GET /edge-router-policies/{er3}', 'after-disable-tunneler'),
    m('GET /edge-routers/{er3}', 'after-patch'),
    m('POST /edge-routers/{er3}/re-enroll', 'happy', { expect: 200 }),
    m('GET /edge-routers/{er3}', 'after-re-enroll'),
    c('POST /enroll', 'erott-missing-csr', { as: 'none', query: { method: 'erott', token: '{er1Token}' }, body: {} }),
    c('POST /enroll', 'erott-wrong-common-name', {
      as: 'none',
      query: { method: 'erott', token: '{er1Token}' },
      body: async () => {
        const { serverCertCsr, certCsr } = await x.routerCsrs('not-the-router');
        return { serverCertCsr, certCsr };
      },
    }),
    c('POST /enroll', 'erott', {
      as: 'none',
      query: { method: 'erott', token: '{er1Token}' },
      body: routerCsrBody(x, 'er1'),
      save: {
        er1Cert: (res, v) => {
          const cert = (jsonOf(res) as { data?: { cert?: unknown } } | undefined)?.data?.cert;
          return typeof cert === 'string'
            ? x.routerCsrs(v.get('er1')).then((r) => ({ cert, key: r.keyPem }))
            : undefined;
        },
      },
      expect: 200,
    }),
    c('POST /enroll', 'erott-used-token', {
      as: 'none',
      query: { method: 'erott', token: '{er1Token}' },
      body: routerCsrBody(x, 'er1'),
    }),
    m('GET /edge-routers/{er1}', 'enrolled'),
    c('POST /enroll/extend/router', 'no-cert', {
      as: 'none',
      body: routerCsrBody(x, 'er1'),
    }),
    c('POST /enroll/extend/router', 'happy', { as: 'none', cert: 'er1Cert', body: routerCsrBody(x, 'er1') }),
    c('POST /enroll/extend/router', 'missing-csr', { as: 'none', cert: 'er1Cert', body: {} }),
    m('POST /routers', 'happy', {
      body: { name: 'd-r1', cost: 3, noTraversal: false, disabled: false },
      save: { r1: 'data.id' },
      expect: 201,
    }),
    m('POST /routers', 'temp', { body: { name: 'd-r2' }, save: { r2: 'data.id' } }),
    m('POST /routers', 'missing-name', { body: {} }),
    m('POST /routers', 'duplicate-name', { body: { name: 'd-r1' } }),
    m('POST /routers', 'duplicate-of-edge-router', { body: { name: 'd-er1' } }),
    m('GET /routers', 'happy', { expect: 200 }),
    m('GET /routers/{r1}', 'happy', { expect: 200 }),
    m('GET /routers/{er1}', 'edge-router'),
    m('PUT /routers/{r1}', 'happy', {
      body: { name: 'd-r1', cost: 4, noTraversal: true, disabled: false },
      expect: 200,
    }),
    m('PATCH /routers/{r1}', 'happy', { body: { cost: 5 }, expect: 200 }),
    m('GET /routers/{r1}', 'after-patch'),
    m('POST /transit-routers', 'happy', { body: { name: 'd-tr1' }, save: { tr1: 'data.id' }, expect: 201 }),
    m('POST /transit-routers', 'duplicate-name', { body: { name: 'd-tr1' } }),
    m('GET /transit-routers', 'happy', { expect: 200 }),
    m('GET /transit-routers/{tr1}', 'happy', { expect: 200 }),
    m('GET /transit-routers/{er1}', 'edge-router'),
    m('PUT /transit-routers/{tr1}', 'happy', { body: { name: 'd-tr1', cost: 9 }, expect: 200 }),
    m('PATCH /transit-routers/{tr1}', 'happy', { body: { noTraversal: true }, expect: 200 }),
    m('GET /transit-routers/{tr1}', 'after-patch'),
    m('POST /terminators', 'happy', {
      body: {
        service: '{svc1}',
        router: '{er1}',
        binding: 'transport',
        address: 'tcp:127.0.0.1:8080',
        cost: 10,
        precedence: 'default',
      },
      save: { term1: 'data.id' },
      expect: 201,
    }),
    m('POST /terminators', 'second', {
      body: {
        service: '{svc1}',
        router: '{r1}',
        binding: 'transport',
        address: 'tcp:127.0.0.1:8081',
        identity: 'host-1',
      },
      save: { term2: 'data.id' },
    }),
    m('POST /terminators', 'unknown-service', {
      body: { service: 'nope', router: '{er1}', binding: 'transport', address: 'tcp:127.0.0.1:1' },
    }),
    m('POST /terminators', 'unknown-router', {
      body: { service: '{svc1}', router: 'nope', binding: 'transport', address: 'tcp:127.0.0.1:1' },
    }),
    m('POST /terminators', 'missing-binding', {
      body: { service: '{svc1}', router: '{er1}', address: 'tcp:127.0.0.1:1' },
    }),
    m('POST /terminators', 'bad-precedence', {
      body: {
        service: '{svc1}',
        router: '{er1}',
        binding: 'transport',
        address: 'tcp:127.0.0.1:1',
        precedence: 'bogus',
      },
    }),
    m('POST /terminators', 'cost-out-of-range', {
      body: { service: '{svc1}', router: '{er1}', binding: 'transport', address: 'tcp:127.0.0.1:1', cost: 70000 },
    }),
    m('GET /terminators', 'happy', { expect: 200 }),
    m('GET /terminators', 'filter-router-name', { query: { filter: 'router.name = "d-er1"' } }),
    m('GET /terminators', 'filter-service', { query: { filter: 'service = "{svc1}"' } }),
    m('GET /terminators/{term1}', 'happy', { expect: 200 }),
    m('PUT /terminators/{term1}', 'happy', {
      body: {
        service: '{svc1}',
        router: '{er1}',
        binding: 'transport',
        address: 'tcp:127.0.0.1:8080',
        cost: 20,
        precedence: 'required',
      },
      expect: 200,
    }),
    m('PATCH /terminators/{term1}', 'happy', { body: { cost: 30 }, expect: 200 }),
    m('GET /terminators/{term1}', 'after-patch'),
    m('GET /services/{svc1}/terminators', 'happy', { expect: 200 }),

    // --- posture checks (policy) ---
    m('GET /posture-check-types', 'happy', { expect: 200 }),
    m('GET /posture-check-types/OS', 'happy', { expect: 200 }),
    m('GET /posture-check-types/MFA', 'mfa'),
    m('POST /posture-checks', 'happy', {
      body: {
        name: 'd-pc-os',
        typeId: 'OS',
        operatingSystems: [{ type: 'Windows', versions: ['>=10.0.19041'] }],
        roleAttributes: ['pc'],
      },
      save: { pcOs: 'data.id' },
      expect: 201,
    }),
    m('POST /posture-checks', 'mfa', {
      body: {
        name: 'd-pc-mfa',
        typeId: 'MFA',
        timeoutSeconds: 300,
        promptOnWake: true,
        promptOnUnlock: false,
        ignoreLegacyEndpoints: true,
        roleAttributes: ['pc2'],
      },
      save: { pcMfa: 'data.id' },
      expect: 201,
    }),
    m('POST /posture-checks', 'process', {
      body: { name: 'd-pc-proc', typeId: 'PROCESS', process: { osType: 'Linux', path: '/usr/bin/diff' } },
      save: { pcProc: 'data.id' },
    }),
    m('POST /posture-checks', 'process-multi', {
      body: {
        name: 'd-pc-pm',
        typeId: 'PROCESS_MULTI',
        semantic: 'AllOf',
        processes: [{ osType: 'Windows', path: 'C:\\diff.exe', hashes: [], signerFingerprints: [] }],
      },
      save: { pcMulti: 'data.id' },
    }),
    m('POST /posture-checks', 'domain', {
      body: { name: 'd-pc-dom', typeId: 'DOMAIN', domains: ['corp.example'], roleAttributes: ['pc'] },
      save: { pcDomain: 'data.id' },
      expect: 201,
    }),
    m('POST /posture-checks', 'mac', {
      body: { name: 'd-pc-mac', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] },
      save: { pcMac: 'data.id' },
    }),
    m('POST /posture-checks', 'bad-type', { body: { name: 'd-pc-x', typeId: 'BOGUS' } }),
    m('POST /posture-checks', 'missing-os', { body: { name: 'd-pc-x', typeId: 'OS' } }),
    m('POST /posture-checks', 'empty-os', { body: { name: 'd-pc-x', typeId: 'OS', operatingSystems: [] } }),
    m('POST /posture-checks', 'bad-os-type', {
      body: { name: 'd-pc-x', typeId: 'OS', operatingSystems: [{ type: 'Amiga', versions: [] }] },
    }),
    m('POST /posture-checks', 'duplicate-name', {
      body: { name: 'd-pc-dom', typeId: 'DOMAIN', domains: ['x.example'] },
    }),
    m('GET /posture-checks', 'happy', { expect: 200 }),
    m('GET /posture-checks', 'role-filter', { query: { roleFilter: ['#pc'] } }),
    m('GET /posture-checks', 'filter-type', { query: { filter: 'typeId = "OS"' } }),
    m('GET /posture-checks/{pcOs}', 'happy', { expect: 200 }),
    m('GET /posture-checks/{pcMfa}', 'mfa'),
    m('GET /posture-checks/{pcProc}', 'process'),
    m('GET /posture-checks/{pcMulti}', 'process-multi'),
    m('GET /posture-checks/{pcMac}', 'mac'),
    m('PUT /posture-checks/{pcDomain}', 'happy', {
      body: { name: 'd-pc-dom', typeId: 'DOMAIN', domains: ['corp.example', 'other.example'], roleAttributes: ['pc'] },
      expect: 200,
    }),
    m('PUT /posture-checks/{pcDomain}', 'missing-type', { body: { name: 'd-pc-dom', domains: ['corp.example'] } }),
    m('PATCH /posture-checks/{pcOs}', 'happy', { body: { typeId: 'OS', roleAttributes: ['pc', 'os'] }, expect: 200 }),
    m('PATCH /posture-checks/{pcMfa}', 'mfa', { body: { typeId: 'MFA', timeoutSeconds: 600 } }),
    m('PATCH /posture-checks/{pcMfa}', 'without-type', { body: { timeoutSeconds: 900 } }),
    m('GET /posture-checks/{pcMfa}', 'after-patch'),
    m('GET /posture-check-role-attributes', 'happy', { expect: 200 }),

    // --- service policies, edge router policies, service edge router policies (policy) ---
    m('POST /service-policies', 'happy', {
      body: sp('d-dial', { identityRoles: ['#eng'], serviceRoles: ['@{svc1}'] }),
      save: { spDial: 'data.id' },
      expect: 201,
    }),
    m('POST /service-policies', 'bind', {
      body: sp('d-bind', { type: 'Bind', semantic: 'AllOf', identityRoles: ['@{carol}'], serviceRoles: ['#web'] }),
      save: { spBind: 'data.id' },
      expect: 201,
    }),
    m('POST /service-policies', 'allof', {
      body: sp('d-allof', { semantic: 'AllOf', identityRoles: ['#eng', '#red'], serviceRoles: ['#web', '#idle'] }),
      save: { spAllOf: 'data.id' },
      expect: 201,
    }),
    m('POST /service-policies', 'all', {
      body: sp('d-all', { identityRoles: ['#all'], serviceRoles: ['@{svc2}'] }),
      save: { spAll: 'data.id' },
      expect: 201,
    }),
    m('POST /service-policies', 'posture', {
      body: sp('d-posture', {
        identityRoles: ['@{userIdent}'],
        serviceRoles: ['@{svc3}'],
        postureCheckRoles: ['#pc', '@{pcMac}'],
      }),
      save: { spPosture: 'data.id' },
      expect: 201,
    }),
    m('POST /service-policies', 'temp', {
      body: sp('d-sp-temp', { identityRoles: ['@{temp}'] }),
      save: { spTemp: 'data.id' },
    }),
    m('POST /service-policies', 'bad-role', { body: sp('d-sp-x', { identityRoles: ['eng'] }) }),
    m('POST /service-policies', 'all-mixed', { body: sp('d-sp-x', { identityRoles: ['#all', '#eng'] }) }),
    m('POST /service-policies', 'unknown-id', { body: sp('d-sp-x', { serviceRoles: ['@nope'] }) }),
    m('POST /service-policies', 'id-by-name', { body: sp('d-sp-x', { serviceRoles: ['@d-web'] }) }),
    m('POST /service-policies', 'missing-semantic', { body: { name: 'd-sp-x', type: 'Dial' } }),
    m('POST /service-policies', 'missing-type', { body: { name: 'd-sp-x', semantic: 'AnyOf' } }),
    m('POST /service-policies', 'bad-type', { body: sp('d-sp-x', { type: 'Bogus' }) }),
    m('POST /service-policies', 'bad-semantic', { body: sp('d-sp-x', { semantic: 'Some' }) }),
    m('POST /service-policies', 'roles-not-array', { body: sp('d-sp-x', { identityRoles: '#eng' }) }),
    m('POST /service-policies', 'duplicate-name', { body: sp('d-dial') }),
    m('GET /service-policies', 'happy', { expect: 200 }),
    m('GET /service-policies', 'filter-type', { query: { filter: 'type = 1' } }),
    m('GET /service-policies', 'filter-type-name', { query: { filter: 'type = "Dial"' } }),
    m('GET /service-policies', 'filter-roles', { query: { filter: 'anyOf(identityRoles) = "#eng"' } }),
    m('GET /service-policies', 'filter-identities', { query: { filter: 'anyOf(identities) = "{userIdent}"' } }),
    m('GET /service-policies/{spDial}', 'happy', { expect: 200 }),
    m('GET /service-policies/{spBind}', 'bind'),
    m('GET /service-policies/{spPosture}', 'posture'),
    m('GET /service-policies/{spDial}/identities', 'happy', { expect: 200 }),
    m('GET /service-policies/{spAllOf}/identities', 'allof'),
    m('GET /service-policies/{spAllOf}/services', 'allof'),
    m('GET /service-policies/{spAll}/identities', 'all', { query: { sort: 'name' } }),
    m('GET /service-policies/{spDial}/services', 'happy', { expect: 200 }),
    m('GET /service-policies/{spPosture}/posture-checks', 'happy', { expect: 200 }),
    m('PUT /service-policies/{spTemp}', 'happy', {
      body: sp('d-sp-temp', { type: 'Bind', identityRoles: ['#all'], serviceRoles: ['@{svc2}'] }),
      expect: 200,
    }),
    m('PATCH /service-policies/{spTemp}', 'happy', { body: { identityRoles: ['#ops'] }, expect: 200 }),
    m('PATCH /service-policies/{spTemp}', 'roles-null', { body: { serviceRoles: null } }),
    m('GET /service-policies/{spTemp}', 'after-roles-null'),
    m('PATCH /service-policies/{spTemp}', 'bad-semantic', { body: { semantic: 'Bogus' } }),
    m('PATCH /service-policies/{spTemp}', 'bad-role', { body: { identityRoles: ['ops'] } }),
    m('POST /edge-router-policies', 'happy', {
      body: erp('d-erp', { identityRoles: ['#eng'], edgeRouterRoles: ['#public'] }),
      save: { erp: 'data.id' },
      expect: 201,
    }),
    m('POST /edge-router-policies', 'by-id', {
      body: erp('d-erp-ids', {
        semantic: 'AllOf',
        identityRoles: ['@{carol}', '@{alice}'],
        edgeRouterRoles: ['@{er1}', '@{er3}'],
      }),
      save: { erpIds: 'data.id' },
      expect: 201,
    }),
    m('POST /edge-router-policies', 'allof', {
      body: erp('d-erp-allof', {
        semantic: 'AllOf',
        identityRoles: ['#eng', '#blue'],
        edgeRouterRoles: ['#public', '#tun'],
      }),
      save: { erpAllOf: 'data.id' },
    }),
    m('POST /edge-router-policies', 'temp', { body: erp('d-erp-temp'), save: { erpTemp: 'data.id' } }),
    m('POST /edge-router-policies', 'bad-role', { body: erp('d-erp-x', { edgeRouterRoles: ['public'] }) }),
    m('POST /edge-router-policies', 'unknown-id', { body: erp('d-erp-x', { edgeRouterRoles: ['@nope'] }) }),
    m('POST /edge-router-policies', 'missing-semantic', { body: { name: 'd-erp-x' } }),
    m('POST /edge-router-policies', 'duplicate-name', { body: erp('d-erp') }),
    m('GET /edge-router-policies', 'happy', { expect: 200 }),
    m('GET /edge-router-policies', 'filter-system', { query: { filter: 'isSystem = true' } }),
    m('GET /edge-router-policies/{erp}', 'happy', { expect: 200 }),
    m('GET /edge-router-policies/{erpIds}', 'by-id'),
    m('GET /edge-router-policies/{erp}/edge-routers', 'happy', { expect: 200 }),
    m('GET /edge-router-policies/{erp}/identities', 'happy', { expect: 200 }),
    m('GET /edge-router-policies/{erpAllOf}/edge-routers', 'allof'),
    m('GET /edge-router-policies/{erpAllOf}/identities', 'allof'),
    m('PUT /edge-router-policies/{erpTemp}', 'happy', {
      body: erp('d-erp-temp', { identityRoles: ['#all'], edgeRouterRoles: ['#all'] }),
      expect: 200,
    }),
    m('PATCH /edge-router-policies/{erpTemp}', 'happy', { body: { semantic: 'AllOf' }, expect: 200 }),
    m('GET /edge-router-policies/{erpTemp}', 'after-patch'),
    m('POST /service-edge-router-policies', 'happy', {
      body: serp('d-serp', { serviceRoles: ['#all'], edgeRouterRoles: ['#all'] }),
      save: { serp: 'data.id' },
      expect: 201,
    }),
    m('POST /service-edge-router-policies', 'by-id', {
      body: serp('d-serp-ids', { semantic: 'AllOf', serviceRoles: ['@{svc2}'], edgeRouterRoles: ['@{er3}'] }),
      save: { serpIds: 'data.id' },
      expect: 201,
    }),
    m('POST /service-edge-router-policies', 'temp', { body: serp('d-serp-temp'), save: { serpTemp: 'data.id' } }),
    m('POST /service-edge-router-policies', 'bad-role', { body: serp('d-serp-x', { serviceRoles: ['web'] }) }),
    m('POST /service-edge-router-policies', 'unknown-id', { body: serp('d-serp-x', { serviceRoles: ['@nope'] }) }),
    m('POST /service-edge-router-policies', 'duplicate-name', { body: serp('d-serp') }),
    m('GET /service-edge-router-policies', 'happy', { expect: 200 }),
    m('GET /service-edge-router-policies/{serp}', 'happy', { expect: 200 }),
    m('GET /service-edge-router-policies/{serpIds}', 'by-id'),
    m('GET /service-edge-router-policies/{serp}/edge-routers', 'happy', { expect: 200 }),
    m('GET /service-edge-router-policies/{serp}/services', 'happy', { expect: 200 }),
    m('PUT /service-edge-router-policies/{serpTemp}', 'happy', {
      body: serp('d-serp-temp', { serviceRoles: ['#web'], edgeRouterRoles: ['#public'] }),
      expect: 200,
    }),
    m('PATCH /service-edge-router-policies/{serpTemp}', 'happy', {
      body: { edgeRouterRoles: ['@{er1}'] },
      expect: 200,
    }),
    m('GET /service-edge-router-policies/{serpTemp}', 'after-patch'),
    m('GET /edge-router-role-attributes', 'happy', { expect: 200 }),
    m('GET /service-role-attributes', 'happy', { expect: 200 }),
    m('GET /identity-role-attributes', 'after-policies'),

    // --- associations (policy) ---
    m('GET /identities/{alice}/service-policies', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/edge-router-policies', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/edge-routers', 'happy', { expect: 200 }),
    m('GET /identities/{alice}/services', 'happy', { expect: 200 }),
    m('GET /identities/{carol}/services', 'bind'),
    m('GET /identities/{carol}/edge-routers', 'by-id'),
    m('GET /identities/{adminId}/services', 'admin'),
    m('GET /identities/{alice}/policy-advice/{svc1}', 'happy', { expect: 200 }),
    m('GET /identities/{carol}/policy-advice/{svc1}', 'bind'),
    m('GET /identities/{frank}/policy-advice/{svc1}', 'no-access'),
    m('GET /identities/{alice}/policy-advice/nope', 'unknown-service'),
    m('GET /edge-routers/{er1}/edge-router-policies', 'happy', { expect: 200 }),
    m('GET /edge-routers/{er1}/identities', 'happy', { query: { sort: 'name' }, expect: 200 }),
    m('GET /edge-routers/{er1}/service-edge-router-policies', 'happy', { expect: 200 }),
    m('GET /edge-routers/{er1}/services', 'happy', { expect: 200 }),
    m('GET /edge-routers/{er2}/edge-router-policies', 'tunneler'),
    m('GET /edge-routers/{er2}/identities', 'tunneler', { query: { sort: 'name' } }),
    m('GET /services/{svc1}/edge-routers', 'happy', { expect: 200 }),
    m('GET /services/{svc1}/identities', 'happy', { expect: 200 }),
    m('GET /services/{svc1}/service-edge-router-policies', 'happy', { expect: 200 }),
    m('GET /services/{svc1}/service-policies', 'happy', { expect: 200 }),
    m('GET /services/{svc3}/identities', 'posture'),

    // --- identity service configs (inventory) ---
    m('GET /identities/{userIdent}/service-configs', 'happy', { expect: 200 }),
    m('POST /identities/{userIdent}/service-configs', 'happy', {
      body: [{ serviceId: '{svc1}', configId: '{interceptCfg2}' }],
      expect: 200,
    }),
    m('POST /identities/{userIdent}/service-configs', 'unknown-config', {
      body: [{ serviceId: '{svc1}', configId: 'nope' }],
    }),
    m('POST /identities/{userIdent}/service-configs', 'unknown-service', {
      body: [{ serviceId: 'nope', configId: '{interceptCfg2}' }],
    }),
    m('POST /identities/{userIdent}/service-configs', 'not-an-array', {
      body: { serviceId: '{svc1}', configId: '{interceptCfg2}' },
    }),
    m('POST /identities/{userIdent}/service-configs', 'missing-config', { body: [{ serviceId: '{svc1}' }] }),
    m('GET /identities/{userIdent}/service-configs', 'after-assign'),
    m('POST /identities/{userIdent}/service-configs', 'second', {
      body: [{ serviceId: '{svc3}', configId: '{hostCfg}' }],
    }),
    m('DELETE /identities/{userIdent}/service-configs', 'happy', {
      body: [{ serviceId: '{svc3}', configId: '{hostCfg}' }],
      expect: 200,
    }),
    m('GET /identities/{userIdent}/service-configs', 'after-disassociate'),

    // --- the client API as a non-admin identity (policy) ---
    c('POST /posture-response', 'happy', {
      as: 'user',
      body: { id: '{pcOs}', typeId: 'OS', type: 'Windows', version: '10.0.19041', build: '1' },
      expect: 201,
    }),
    c('POST /posture-response', 'domain', {
      as: 'user',
      body: { id: '{pcDomain}', typeId: 'DOMAIN', domain: 'corp.example' },
    }),
    c('POST /posture-response', 'unknown-check', {
      as: 'user',
      body: { id: 'nope', typeId: 'OS', type: 'Linux', version: '5' },
    }),
    c('POST /posture-response', 'bad-type', { as: 'user', body: { id: '{pcOs}', typeId: 'BOGUS' } }),
    c('POST /posture-response', 'missing-id', { as: 'user', body: { typeId: 'OS', type: 'Linux', version: '5' } }),
    c('POST /posture-response-bulk', 'happy', {
      as: 'user',
      body: [
        { id: '{pcOs}', typeId: 'OS', type: 'Windows', version: '10.0.19041', build: '1' },
        { id: '{pcMac}', typeId: 'MAC', macAddresses: ['00:11:22:33:44:55'] },
      ],
      expect: 201,
    }),
    c('POST /posture-response-bulk', 'not-an-array', { as: 'user', body: { id: '{pcOs}', typeId: 'OS' } }),
    m('GET /identities/{userIdent}/posture-data', 'after-responses'),
    c('GET /services', 'happy', { as: 'user', expect: 200 }),
    c('GET /services', 'config-types', { as: 'user', query: { configTypes: ['intercept.v1', 'host.v1'] } }),
    c('GET /services', 'config-types-all', { as: 'user', query: { configTypes: 'all' } }),
    c('GET /services', 'filter', { as: 'user', query: { filter: 'name = "d-web"' } }),
    c('GET /services', 'admin', { as: 'adminClient' }),
    c('GET /services/{svc1}', 'happy', { as: 'user', expect: 200 }),
    c('GET /services/{svc3}', 'posture', { as: 'user' }),
    c('GET /services/{tempSvc}', 'not-visible', { as: 'user' }),
    c('GET /services/{svc1}', 'admin', { as: 'adminClient' }),
    c('GET /services/{svc1}/edge-routers', 'happy', { as: 'user', expect: 200 }),
    c('GET /services/{svc1}/terminators', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-identity/edge-routers', 'happy', { as: 'user', expect: 200 }),
    c('GET /current-identity/edge-routers', 'admin', { as: 'adminClient' }),
    c('GET /current-api-session/service-updates', 'happy', { as: 'user', expect: 200 }),
    c('POST /sessions', 'happy', {
      as: 'user',
      body: { serviceId: '{svc1}', type: 'Dial' },
      save: { sess1: 'data.id' },
      expect: 201,
    }),
    c('POST /sessions', 'default-type', { as: 'user', body: { serviceId: '{svc1}' }, save: { sess2: 'data.id' } }),
    c('POST /sessions', 'posture', { as: 'user', body: { serviceId: '{svc3}', type: 'Dial' } }),
    c('POST /sessions', 'bind-not-allowed', { as: 'user', body: { serviceId: '{svc1}', type: 'Bind' } }),
    c('POST /sessions', 'unknown-service', { as: 'user', body: { serviceId: 'nope', type: 'Dial' } }),
    c('POST /sessions', 'not-visible', { as: 'user', body: { serviceId: '{tempSvc}', type: 'Dial' } }),
    c('POST /sessions', 'missing-service', { as: 'user', body: { type: 'Dial' } }),
    c('POST /sessions', 'bad-type', { as: 'user', body: { serviceId: '{svc1}', type: 'Bogus' } }),
    c('POST /sessions', 'bind', {
      as: 'carolToken',
      body: { serviceId: '{svc1}', type: 'Bind' },
      save: { carolBind: 'data.id' },
    }),
    c('POST /sessions', 'admin-no-policy', { as: 'adminClient', body: { serviceId: '{tempSvc}', type: 'Dial' } }),
    c('GET /sessions', 'happy', { as: 'user', expect: 200 }),
    c('GET /sessions/{sess1}', 'happy', { as: 'user', expect: 200 }),
    c('GET /sessions/{sess1}', 'other-identity', { as: 'frankToken' }),
    c('GET /services/{svc1}/edge-routers', 'with-session', { as: 'user', query: { sessionToken: 'x' } }),
    m('GET /sessions', 'admin', { expect: 200 }),
    m('GET /sessions', 'filter-service', { query: { filter: 'service = "{svc1}"' } }),
    m('GET /sessions/{sess1}', 'admin', { expect: 200 }),
    m('GET /sessions/{sess1}/route-path', 'happy'),
    c('DELETE /sessions/{sess2}', 'happy', { as: 'user', expect: 200 }),
    m('DELETE /sessions/{sess2}', 'already-deleted'),
    c('DELETE /sessions/{sess1}', 'other-identity', { as: 'frankToken' }),
    c('GET /current-api-session/service-updates', 'after-change', { as: 'user' }),
    m('GET /api-sessions', 'happy', { query: { sort: 'createdAt' }, expect: 200 }),
    m('GET /api-sessions', 'filter-identity', { query: { filter: 'identity = "{userIdent}"' } }),
    m('GET /api-sessions/{userSession}', 'happy', { expect: 200 }),
    m('GET /identities/{userIdent}', 'with-sessions'),
    m('GET /identities/{userIdent}/failed-service-requests', 'after-sessions'),
    c('PUT /services/{tempSvc}', 'happy', {
      as: 'adminClient',
      body: { name: 'd-temp-svc', encryptionRequired: true },
    }),
    c('PATCH /services/{tempSvc}', 'happy', { as: 'adminClient', body: { name: 'd-temp-svc' } }),
    c('PATCH /services/{tempSvc}', 'non-admin', { as: 'user', body: { roleAttributes: ['y'] } }),

    // --- summary, database (inventory) ---
    m('GET /summary', 'happy', { expect: 200 }),
    m('POST /database/snapshot', 'happy', { expect: 200 }),
    m('POST /database/snapshot', 'too-soon'),
    m('POST /database/check-data-integrity', 'happy', { expect: 202 }),
    m('GET /database/data-integrity-results', 'happy', {
      until: (res) => res.json?.data?.inProgress === false,
      expect: 200,
    }),
    m('POST /database/fix-data-integrity', 'happy', { expect: 202 }),
    m('GET /database/data-integrity-results', 'after-fix', { until: (res) => res.json?.data?.inProgress === false }),

    // --- this controller's extensions (gateway, audit, policy) ---
    m('GET /extensions/audit-records', 'happy', { query: { limit: '1' }, compare: 'status' }),
    m('GET /extensions/audit-records/export', 'happy', { compare: 'status' }),
    m('GET /extensions/events', 'happy', { stream: true, compare: 'status' }),
    m('POST /extensions/what-if', 'happy', {
      body: { changes: [{ action: 'delete', entityType: 'servicePolicies', id: '{spDial}' }] },
      compare: 'status',
    }),
  ];
}

/** Deletes, re-enrollments, logouts: what each does to the others. Runs after the generic cases. */
export function lifecycleSteps(x: Materials): Step[] {
  return [
    // an identity named by @id in policies
    m('DELETE /identities/{carol}', 'happy', { expect: 200 }),
    m('GET /identities/{carol}', 'deleted'),
    m('GET /service-policies/{spBind}', 'after-identity-delete'),
    m('GET /service-policies/{spBind}/identities', 'after-identity-delete'),
    m('GET /edge-router-policies/{erpIds}', 'after-identity-delete'),
    m('GET /edge-router-policies/{erpIds}/identities', 'after-identity-delete'),
    c('GET /current-api-session', 'after-identity-delete', { as: 'carolToken' }),
    m('GET /sessions/{carolBind}', 'after-identity-delete'),
    m('GET /enrollments/{carolEnrollment}', 'after-identity-delete'),
    // a service named by @id, with a config, sessions and terminators
    m('DELETE /services/{svc2}', 'happy', { expect: 200 }),
    m('GET /service-policies/{spAll}', 'after-service-delete'),
    m('GET /service-edge-router-policies/{serpIds}', 'after-service-delete'),
    m('DELETE /configs/{hostCfg}', 'in-use'),
    m('DELETE /config-types/{ct}', 'in-use'),
    m('DELETE /config-types/NH5p4FpGR', 'builtin-in-use'),
    m('DELETE /config-types/{ct2}', 'happy', { expect: 200 }),
    m('DELETE /configs/{customCfg}', 'happy', { expect: 200 }),
    m('DELETE /config-types/{ct}', 'after-config-delete'),
    // edge routers named by @id; the tunneler router's identity and system policy
    m('DELETE /edge-routers/{er3}', 'happy', { expect: 200 }),
    m('GET /edge-router-policies/{erpIds}', 'after-router-delete'),
    m('GET /service-edge-router-policies/{serpIds}', 'after-router-delete'),
    m('GET /service-edge-router-policies/{serpIds}/edge-routers', 'after-router-delete'),
    m('DELETE /edge-routers/{er2}', 'tunneler'),
    m('GET /identities/{er2}', 'after-router-delete'),
    m('GET /edge-router-policies/{er2}', 'after-router-delete'),
    m('GET /edge-router-policies', 'after-router-delete', { query: { filter: 'isSystem = true' } }),
    m('DELETE /terminators/{term2}', 'happy', { expect: 200 }),
    m('DELETE /routers/{r2}', 'happy', { expect: 200 }),
    m('DELETE /routers/{r1}', 'with-terminator'),
    m('GET /terminators/{term2}', 'deleted'),
    m('DELETE /transit-routers/{tr1}', 'happy', { expect: 200 }),
    m('DELETE /terminators/{term1}', 'happy'),
    // posture checks named by @id
    m('DELETE /posture-checks/{pcMac}', 'happy', { expect: 200 }),
    m('GET /service-policies/{spPosture}', 'after-posture-check-delete'),
    m('GET /service-policies/{spPosture}/posture-checks', 'after-posture-check-delete'),
    // sessions of a service whose router policies go away
    m('DELETE /service-edge-router-policies/{serp}', 'happy', { expect: 200 }),
    c('POST /sessions', 'no-edge-routers', { as: 'user', body: { serviceId: '{svc1}', type: 'Dial' } }),
    c('GET /sessions/{sess1}', 'after-serp-delete', { as: 'user' }),
    m('DELETE /service-edge-router-policies/{serpTemp}', 'temp'),
    m('DELETE /edge-router-policies/{erpTemp}', 'happy', { expect: 200 }),
    m('DELETE /service-policies/{spTemp}', 'happy', { expect: 200 }),
    m('DELETE /service-policies/{spDial}', 'dial'),
    c('GET /sessions/{sess1}', 'after-policy-delete', { as: 'user' }),
    c('GET /services', 'after-policy-delete', { as: 'user' }),
    // authenticators, API sessions, identities and the sessions they hold
    m('POST /authenticators/{tempAuth}/re-enroll', 'missing-expiry', { body: {} }),
    m('POST /authenticators/{tempAuth}/re-enroll', 'happy', {
      body: { expiresAt: at(2) },
      save: { tempReEnroll: 'data.id' },
      expect: 201,
    }),
    m('GET /authenticators/{tempAuth}', 'after-re-enroll'),
    m('GET /identities/{temp}/enrollments', 'after-re-enroll'),
    m('GET /enrollments/{tempReEnroll}', 'after-re-enroll'),
    c('GET /current-api-session', 'after-re-enroll', { as: 'tempToken' }),
    m('DELETE /authenticators/{erinAuth}', 'happy', { expect: 200 }),
    c('GET /current-api-session', 'after-authenticator-delete', { as: 'erinToken' }),
    m('DELETE /api-sessions/{bobSession}', 'happy', { expect: 200 }),
    c('GET /current-api-session', 'after-api-session-delete', { as: 'bobToken' }),
    m('GET /api-sessions/{bobSession}', 'deleted'),
    m('POST /identities/{frank}/disable', 'lifecycle', { body: { durationMinutes: 0 } }),
    c('GET /current-api-session', 'after-disable', { as: 'frankToken' }),
    m('POST /authenticate', 'disabled-identity', pw('d-frank', 'd-frank-pw-1')),
    m('DELETE /identities/{svcIdent}', 'with-session'),
    c('GET /current-api-session', 'after-identity-delete', { as: 'svcToken' }),
    m('GET /api-sessions/{svcSession}', 'after-identity-delete'),
    m('DELETE /identities/{mfaIdent}/mfa', 'happy', { expect: 200 }),
    c('GET /current-api-session', 'after-mfa-removed', { as: 'mfaPending' }),
    c('GET /services', 'after-mfa-removed', { as: 'mfaPending' }),
    m('GET /identities/{mfaIdent}', 'after-mfa-removed'),
    m('DELETE /identities/{adminId}', 'default-admin'),
    m('DELETE /identities/{erin}', 'happy'),
    m('DELETE /auth-policies/{authPolicy}', 'happy', { expect: 200 }),
    m('DELETE /auth-policies/{totpPolicy}', 'unused'),
    m('DELETE /external-jwt-signers/{signerJwks}', 'happy', { expect: 200 }),
    m('DELETE /external-jwt-signers/{signer}', 'second'),
    m('POST /authenticators', 'duplicate-cert', {
      body: { method: 'cert', identityId: '{frank}', certPem: x.rootSignedPem },
    }),
    c('POST /authenticate', 'cert-ottca', { as: 'none', query: { method: 'cert' }, body: {}, cert: 'caClient1' }),
    c('POST /enroll/ca', 'without-method', { as: 'none', body: {}, cert: 'caClient3' }),
    m('DELETE /cas/{ca2}', 'happy', { expect: 200 }),
    m('DELETE /cas/{ca}', 'with-identities'),
    m('GET /identities/{dave}', 'after-ca-delete'),
    m('DELETE /posture-checks/{pcDomain}', 'in-policy'),
    m('DELETE /enrollments/{daveEnrollment}', 'consumed'),
    m('DELETE /edge-routers/{er1}', 'enrolled'),
    c('DELETE /services/{tempSvc}', 'happy', { as: 'adminClient' }),
    // logging out
    c('DELETE /current-api-session', 'happy', { as: 'aliceSession', expect: 200 }),
    c('GET /current-api-session', 'after-logout', { as: 'aliceSession' }),
    m('DELETE /current-api-session', 'happy', { as: 'tempToken' }),
    m('DELETE /current-api-session', 'after-logout', { as: 'aliceSession' }),
    // Last: cases where the two controllers are known to end in different states (one accepts what
    // the other refuses), so that what they change stays out of every other step's answer.
    m('POST /authenticators', 'cert-unknown-ca', {
      body: { method: 'cert', identityId: '{ivan}', certPem: x.strangerClient.certPem },
    }),
    m('POST /authenticators', 'ivan', {
      body: { method: 'updb', identityId: '{ivan}', username: 'd-ivan', password: 'd-ivan-pw-1' },
      expect: 201,
    }),
    m('POST /authenticators', 'duplicate-username', {
      body: { method: 'updb', identityId: '{kate}', username: 'd-ivan', password: 'd-kate-pw-2' },
    }),
    m('POST /authenticate', 'duplicate-username', pw('d-ivan', 'd-ivan-pw-1')),
    m('POST /authenticators', 'short-password', {
      body: { method: 'updb', identityId: '{dave}', username: 'd-dave-u', password: 'abc' },
    }),
    c('POST /enroll', 'updb-short-password', {
      as: 'none',
      query: { method: 'updb', token: '{janeUpdb}' },
      body: { password: 'abc' },
    }),
    m('POST /authenticate', 'short-password', pw('d-jane', 'abc')),
    m('POST /services', 'config-by-name', {
      body: { name: 'd-by-name', encryptionRequired: true, configs: ['d-intercept'] },
    }),
    m('PUT /routers/{er1}', 'edge-router', { body: { name: 'd-er1', cost: 4 } }),
    m('POST /identities', 'router-type', { body: identity('d-x2', { type: 'Router' }) }),
    m('POST /cas', 'identity-role-with-hash', { body: caBody(x.ca3, { name: 'd-ca-role', identityRoles: ['#x'] }) }),
    m('POST /configs', 'type-by-name', {
      body: { name: 'd-intercept-by-name', configTypeId: 'intercept.v1', data: interceptData },
    }),
    c('POST /enroll/ott', 'happy', {
      as: 'none',
      query: { token: '{ginaOtt}' },
      body: { token: '{ginaOtt}', clientCsr: x.csrs.gina.csrPem },
    }),
    c('POST /enroll/ott', 'pem-body', {
      as: 'none',
      query: { token: '{ginaOtt}' },
      raw: x.csrs.gina.csrPem,
      contentType: PEM,
    }),
    c('POST /enroll/ott', 'missing-token', { as: 'none', body: { clientCsr: x.csrs.gina.csrPem } }),
    c('POST /enroll/updb', 'missing-password', { as: 'none', query: { token: '{hankUpdb}' }, body: {} }),
    c('POST /enroll/updb', 'happy', { as: 'none', query: { token: '{hankUpdb}' }, body: { password: 'd-hank-pw-1' } }),
    c('POST /enroll/updb', 'missing-token', { as: 'none', body: { password: 'd-hank-pw-1' } }),
    m('POST /edge-routers', 'for-enroll-erott', { body: { name: 'd-er4' }, save: { er4: 'data.id' }, expect: 201 }),
    m('GET /edge-routers/{er4}', 'for-enroll-erott', { save: { er4Token: 'data.enrollmentToken' } }),
    c('POST /enroll/erott', 'happy', {
      as: 'none',
      query: { token: '{er4Token}' },
      body: async (v) => {
        const { serverCertCsr, certCsr } = await x.routerCsrs(v.get('er4'));
        return { token: v.get('er4Token'), serverCsr: serverCertCsr, clientCsr: certCsr, serverCertCsr, certCsr };
      },
    }),
    c('POST /enroll/erott', 'missing-csr', { as: 'none', query: { token: '{er4Token}' }, body: {} }),
  ];
}

// ---------------------------------------------------------------------------------------------
// Generic cases, derived from each operation's first happy step

const UNKNOWN_ID = 'unknown-id-0';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The same value with another JSON type (what "wrongly typed" sends). */
function flipped(v: unknown): unknown {
  if (typeof v === 'string') return 12345;
  if (typeof v === 'number') return 'not-a-number';
  if (typeof v === 'boolean') return 'not-a-boolean';
  if (Array.isArray(v)) return 'not-an-array';
  if (isObject(v)) return 'not-an-object';
  return 'x';
}

function derive(template: Step, kase: string, change: Partial<Step>): Step {
  const { save: _save, expect: _expect, until: _until, ...rest } = template;
  return { ...rest, case: kase, ...change, derivedFrom: template };
}

/** The sort field of a list answer: `name` where there is one, else `createdAt`, else `id`. */
function sortField(answer: Answer): string {
  const meta = (answer.body as { meta?: { filterableFields?: string[] } } | undefined)?.meta;
  const fields = meta?.filterableFields ?? [];
  const data = (answer.body as { data?: unknown[] } | undefined)?.data ?? [];
  if (data.length > 0 && typeof data[0] === 'string') return 'id';
  if (fields.includes('name')) return 'name';
  if (fields.includes('createdAt') || fields.length === 0) return 'createdAt';
  return fields[0] ?? 'id';
}

/**
 * The generic cases, from each operation's template (its first `happy` step, else its first step)
 * and the reference's answer to it: access (no session, non-admin, MFA pending), unknown ids, list
 * paging/filter/sort, body validation, PATCH with null and "", duplicate names.
 */
export function genericSteps(templates: Map<string, { step: Step; reference: Answer }>): Step[] {
  const reads: Step[] = [];
  const writes: Step[] = [];
  for (const op of operations) {
    const key = `${op.api}.${op.operationId}`;
    const t = templates.get(key);
    if (!t) continue;
    const { step } = t;
    if (op.access !== 'none') reads.push(derive(step, 'no-session', { as: 'none' }));
    if (op.access === 'admin') reads.push(derive(step, 'non-admin', { as: 'user' }));
    if (op.access === 'authenticated' && !op.mfaPendingOk)
      reads.push(derive(step, 'mfa-pending', { as: 'mfaPending' }));
    reads.push(...unknownIdCases(op, step));
    if (op.method === 'GET') reads.push(...listCases(step, t.reference));
    writes.push(...bodyCases(op, step, t.reference));
  }
  return [...reads, ...writes];
}

function unknownIdCases(op: OperationDef, step: Step): Step[] {
  const template = op.path.split('/');
  const concrete = step.path.split('/');
  const out: Step[] = [];
  template.forEach((seg, i) => {
    const param = /^\{(\w+)\}$/.exec(seg)?.[1];
    if (!param || concrete[i] === undefined) return;
    const path = concrete.map((s, j) => (j === i ? UNKNOWN_ID : s)).join('/');
    out.push(derive(step, param === 'id' ? 'unknown-id' : `unknown-${param}`, { path }));
  });
  return out;
}

/**
 * Lists whose natural sort field ties on the reference (authenticators' and enrollments' createdAt
 * is the zero time there): their pages come from a subset with a field that orders them.
 */
const LIST_ORDER: Record<string, { sort: string; where: string }> = {
  'management.listAuthenticators': { sort: 'updbUsername', where: 'method = "updb"' },
  // Enrollments have no field to sort by that the reference fills (createdAt is the zero time
  // there): the pages are taken from one identity's single pending enrollment.
  'management.listEnrollments': { sort: 'token', where: 'identity = "{jane}"' },
};

function listCases(step: Step, reference: Answer): Step[] {
  const body = reference.body as { data?: unknown; meta?: { pagination?: unknown } } | undefined;
  if (!Array.isArray(body?.data) || !body?.meta?.pagination) return [];
  const fixed = LIST_ORDER[step.op];
  const sort = fixed?.sort ?? sortField(reference);
  const where: Record<string, string> = fixed ? { filter: fixed.where } : {};
  const and = fixed ? `${fixed.where} and ` : '';
  const q = (query: Record<string, string>): Partial<Step> => ({
    query: { ...(step.query ?? {}), ...where, ...query },
  });
  return [
    derive(step, 'limit', q({ limit: '1', sort })),
    derive(step, 'offset', q({ limit: '2', offset: '1', sort })),
    derive(step, 'limit-unlimited', q({ limit: '-1', sort })),
    derive(step, 'limit-zero', q({ limit: '0', sort })),
    derive(step, 'limit-not-a-number', q({ limit: 'ten' })),
    derive(step, 'offset-negative', q({ offset: '-1', sort })),
    derive(step, 'sort-desc', q({ sort: `${sort} desc` })),
    derive(step, 'sort-unknown-field', q({ sort: 'nosuchfield' })),
    derive(step, 'filter-true', q({ filter: `${and}true sort by ${sort} limit 3` })),
    derive(step, 'filter-syntax-error', q({ filter: 'name = ' })),
    derive(step, 'filter-unknown-field', q({ filter: 'nosuchfield = 1' })),
    derive(step, 'filter-id', q({ filter: `${and}id != "x" sort by ${sort}` })),
  ];
}

function bodyCases(op: OperationDef, step: Step, reference: Answer): Step[] {
  if (!['POST', 'PUT', 'PATCH'].includes(op.method) || !isObject(step.body) || step.raw !== undefined) return [];
  const body = step.body;
  const keys = Object.keys(body);
  const out: Step[] = [];
  const restore = (kase: string) => (op.method === 'POST' ? [] : [derive(step, `restore-after-${kase}`, {})]);
  const add = (kase: string, change: Partial<Step>) => {
    out.push(derive(step, kase, change), ...restore(kase));
  };
  if (op.method !== 'PATCH') add('empty-body', { body: {} });
  add('no-body', { body: undefined });
  add('unparsable', { body: undefined, raw: '{"name":', contentType: 'application/json' });
  add('array-body', { body: [] });
  const first = keys[0];
  if (first !== undefined) add(`wrong-type-${first}`, { body: { ...body, [first]: flipped(body[first]) } });
  if (op.method === 'PATCH') {
    for (const key of keys) {
      add(`null-${key}`, { body: { [key]: null } });
      if (typeof body[key] === 'string') add(`empty-${key}`, { body: { [key]: '' } });
    }
    if (!keys.includes('name')) {
      add('null-name', { body: { name: null } });
      add('empty-name', { body: { name: '' } });
    }
  }
  if (op.method === 'PUT' && keys.includes('name')) add('empty-name', { body: { ...body, name: '' } });
  if (op.method === 'POST' && reference.status === 201 && typeof body.name === 'string') {
    out.push(derive(step, 'duplicate', {}));
  }
  return out;
}
