import { type LocalCluster, startLocalCluster } from '../../deploy/local-cluster.ts';
import { type HttpRequest, type HttpResponse, createHttpClient } from './http.ts';
import { uniqueName } from './infra.ts';
import { certificatesFromPkcs7Base64 } from './pkcs7.ts';
import { loadSpecValidator } from './spec-validator.ts';

export type Api = 'client' | 'management';
export const base: Record<Api, string> = { client: '/edge/client/v1', management: '/edge/management/v1' };

/**
 * The end-to-end fixture: the five services as separate processes on the machine's NATS, Redis
 * and Postgres (own namespace and databases), an HTTPS client that trusts only the controller
 * CA it fetched from `/.well-known/est/cacerts`, and spec validation of every response.
 */
export async function startE2e(options: Parameters<typeof startLocalCluster>[0] = {}) {
  const cluster: LocalCluster = await startLocalCluster({
    namespace: uniqueName('e2e'),
    dropDatabases: true,
    adminPassword: uniqueName('pw'),
    ...options,
  });
  const insecure = createHttpClient(cluster.baseUrl, undefined);
  const cacerts = await insecure({ path: '/.well-known/est/cacerts' });
  const caPems = certificatesFromPkcs7Base64(cacerts.text);
  const http = createHttpClient(cluster.baseUrl, caPems.join(''));
  const validator = loadSpecValidator();

  /** Sends a request to one API and validates the response against that API's spec. */
  async function call(api: Api, req: HttpRequest & { token?: string; skipValidation?: boolean }): Promise<HttpResponse> {
    const headers = { ...(req.headers ?? {}) };
    if (req.token) headers['zt-session'] = req.token;
    const path = req.path.startsWith('/edge/') ? req.path : base[api] + req.path;
    const res = await http({ ...req, path, headers });
    if (!req.skipValidation) {
      validator.validate(api, req.method ?? 'GET', path, res.status, res.json ?? (res.text || undefined), String(res.headers['content-type'] ?? ''));
    }
    return res;
  }

  return { cluster, http, call, caPems, validator, stop: () => cluster.stop() };
}

export type E2e = Awaited<ReturnType<typeof startE2e>>;
