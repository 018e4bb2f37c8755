import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { type LocalCluster, startLocalCluster } from '../../deploy/local-cluster.ts';
import { type HttpRequest, type HttpResponse, createHttpClient } from './http.ts';
import { infra, uniqueName } from './infra.ts';
import { certificatesFromPkcs7Base64 } from './pkcs7.ts';
import { loadSpecValidator } from './spec-validator.ts';

export type Api = 'client' | 'management';
export const base: Record<Api, string> = { client: '/edge/client/v1', management: '/edge/management/v1' };

/**
 * The end-to-end fixture: the six services as separate processes on the machine's NATS, Redis
 * and Postgres (own namespace and databases), an HTTPS client that trusts only the controller
 * CA it fetched from `/.well-known/est/cacerts`, and spec validation of every response.
 */
export async function startE2e(options: Parameters<typeof startLocalCluster>[0] = {}) {
  const cluster: LocalCluster = await startLocalCluster({
    namespace: uniqueName('e2e'),
    postgresUrl: infra.postgresUrl,
    redisUrl: infra.redisUrl,
    natsUrl: infra.natsUrl,
    dropDatabases: true,
    adminPassword: uniqueName('pw'),
    ...options,
  });
  try {
    const insecure = createHttpClient(cluster.baseUrl, undefined);
    const cacerts = await insecure({ path: '/.well-known/est/cacerts' });
    const caPems = certificatesFromPkcs7Base64(cacerts.text);
    const http = createHttpClient(cluster.baseUrl, caPems.join(''));
    const validator = loadSpecValidator();
    // Every secret that crosses the API in this run (issue 12: no log line may carry one); the logs
    // of every process are searched for them when the cluster stops.
    const secrets = new Set<string>([cluster.adminPassword]);
    const keep = (value: unknown, depth = 0): void => {
      if (depth > 6 || typeof value !== 'object' || value === null) return;
      for (const [key, v] of Object.entries(value)) {
        if (typeof v === 'string' && secretKeys.has(key) && v.length >= 8) secrets.add(v);
        else if (Array.isArray(v) && secretKeys.has(key))
          for (const x of v)
            if (typeof x === 'string') secrets.add(x);
            else keep(v, depth + 1);
      }
    };

    /** Sends a request to one API and validates the response against that API's spec. */
    const call = apiCaller(http, validator, (req, res) => {
      keep(req.body);
      keep(res.json);
    });

    /** Logs in with a password on one API; returns the token (asserts success). */
    async function login(username: string, password: string, api: Api = 'management'): Promise<string> {
      const res = await call(api, {
        method: 'POST',
        path: '/authenticate?method=password',
        body: { username, password },
      });
      if (res.status !== 200) throw new Error(`login of ${username} failed: ${res.status} ${res.text}`);
      return res.json.data.token as string;
    }

    const adminToken = await login(cluster.adminUsername, cluster.adminPassword);

    /** Creates an identity (fixture: never asserts) and returns its id. */
    async function createIdentity(body: Record<string, unknown> = {}): Promise<string> {
      const res = await call('management', {
        method: 'POST',
        path: '/identities',
        token: adminToken,
        body: { name: uniqueName('id'), type: 'User', isAdmin: false, ...body },
      });
      if (res.status !== 201) throw new Error(`identity create failed: ${res.status} ${res.text}`);
      return res.json.data.id as string;
    }

    /** A non-admin (or admin) identity with a updb authenticator, logged in: the caller matrix's middle row. */
    async function createUser(options: { isAdmin?: boolean; roleAttributes?: string[] } = {}) {
      const username = uniqueName('user');
      const password = `pw-${uniqueName('x')}`;
      const id = await createIdentity({
        isAdmin: options.isAdmin ?? false,
        roleAttributes: options.roleAttributes ?? [],
      });
      const res = await call('management', {
        method: 'POST',
        path: '/authenticators',
        token: adminToken,
        body: { method: 'updb', identityId: id, username, password },
      });
      if (res.status !== 201) throw new Error(`authenticator create failed: ${res.status} ${res.text}`);
      const token = await login(username, password);
      return { id, username, password, token, authenticatorId: res.json.data.id as string };
    }
    return {
      cluster,
      http,
      call,
      caPems,
      validator,
      login,
      adminToken,
      createIdentity,
      createUser,
      secrets,
      stop: async () => {
        await cluster.stop();
        assertNoSecretLogged(cluster.logDir, secrets);
      },
    };
  } catch (err) {
    // A fixture that failed after the cluster started must not leave six processes behind.
    await cluster.stop().catch(() => undefined);
    throw err;
  }
}

/**
 * Sends a request to one API (`/edge/<api>/v1` prefixed unless the path is absolute) with the
 * session token, and validates the response against that API's spec unless told not to;
 * `onExchange` sees every request and response. Shared by the cluster and embedded fixtures.
 */
export function apiCaller(
  http: ReturnType<typeof createHttpClient>,
  validator: ReturnType<typeof loadSpecValidator>,
  onExchange?: (req: HttpRequest, res: HttpResponse) => void,
) {
  return async (api: Api, req: HttpRequest & { token?: string; skipValidation?: boolean }): Promise<HttpResponse> => {
    const headers = { ...(req.headers ?? {}) };
    if (req.token) headers['zt-session'] = req.token;
    const path = req.path.startsWith('/edge/') ? req.path : base[api] + req.path;
    const res = await http({ ...req, path, headers });
    onExchange?.(req, res);
    if (!req.skipValidation) {
      validator.validate(
        api,
        req.method ?? 'GET',
        path,
        res.status,
        res.json ?? (res.text || undefined),
        String(res.headers['content-type'] ?? ''),
      );
    }
    return res;
  };
}

/** Fields whose values are secrets: passwords, tokens, enrollment JWTs, TOTP secrets, recovery codes. */
const secretKeys = new Set([
  'password',
  'currentPassword',
  'newPassword',
  'token',
  'jwt',
  'enrollmentJwt',
  'enrollmentToken',
  'secret',
  'recoveryCodes',
  'identitySecret',
]);

/** Fails when any service log of the run holds one of the secrets (a leak the tests would not see). */
export function assertNoSecretLogged(logDir: string, secrets: Set<string>): void {
  const leaks: string[] = [];
  for (const file of readdirSync(logDir).filter((f) => f.endsWith('.log'))) {
    const text = readFileSync(join(logDir, file), 'utf8');
    for (const secret of secrets) if (text.includes(secret)) leaks.push(`${file}: …${secret.slice(0, 6)}…`);
  }
  if (leaks.length > 0) throw new Error(`secrets found in service logs: ${leaks.join(', ')}`);
}

export type E2e = Awaited<ReturnType<typeof startE2e>>;

/**
 * An auth policy's create body: everything allowed (cert, updb with a 5-character minimum and no
 * lockout, ext-JWT with no signer list), no secondary factor; each part overridable.
 */
export function authPolicyBody(
  o: { updb?: object; cert?: object; extJwt?: object; secondary?: object; name?: string } = {},
) {
  return {
    name: o.name ?? uniqueName('policy'),
    primary: {
      cert: { allowed: true, allowExpiredCerts: true, ...o.cert },
      updb: {
        allowed: true,
        minPasswordLength: 5,
        requireSpecialChar: false,
        requireNumberChar: false,
        requireMixedCase: false,
        maxAttempts: 0,
        lockoutDurationMinutes: 0,
        ...o.updb,
      },
      extJwt: { allowed: true, allowedSigners: [], ...o.extJwt },
    },
    secondary: { requireTotp: false, requireExtJwtSigner: null, ...o.secondary },
    tags: {},
  };
}
