import { type ApiName, type HttpMethod, type OperationDef, apiBasePath, inputLimits } from '@ziti/contracts';
import FindMyWay from 'find-my-way';

export interface RouteMatch {
  op: OperationDef;
  params: Record<string, string>;
}

export type RouteLookup =
  { kind: 'found'; match: RouteMatch } | { kind: 'method-not-allowed'; allowed: HttpMethod[] } | { kind: 'not-found' };

const methods: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * Every operation of the table under its API base, in a radix-tree router (find-my-way), so a
 * lookup costs the length of the path, not the number of routes (~250).
 */
export class RouteTable {
  // A parameter as long as the URL still routes: its length is the input validation's to refuse, naming it
  // (find-my-way's own limit of 100 would make it a 404).
  private readonly router = FindMyWay({
    ignoreTrailingSlash: true,
    caseSensitive: true,
    maxParamLength: inputLimits.maxUrlLength,
  });

  constructor(operations: readonly OperationDef[]) {
    for (const op of operations) {
      const path = apiBasePath[op.api] + op.path.replace(/\{([^}]+)\}/g, ':$1');
      this.router.on(
        op.method,
        path === apiBasePath[op.api] + '/' ? `${apiBasePath[op.api]}/` : path,
        () => undefined,
        { op },
      );
    }
  }

  lookup(method: string, path: string): RouteLookup {
    const found = this.router.find(method as HttpMethod, path);
    if (found) {
      const store = found.store as { op: OperationDef };
      return { kind: 'found', match: { op: store.op, params: decodeParams(found.params) } };
    }
    const allowed = methods.filter((m) => m !== method && this.router.find(m, path));
    return allowed.length > 0 ? { kind: 'method-not-allowed', allowed } : { kind: 'not-found' };
  }
}

function decodeParams(params: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Legacy paths (ZITI-FACTS §14.4): the bare root and `/version` answer as the client API, any path
 * outside `/edge`, `/fabric` and `/.well-known` is a client API path, `/edge/v1/…` is the client
 * API, and `/.well-known/est/cacerts` at the root is the client API's.
 */
export function canonicalPath(path: string): string {
  if (path === '' || path === '/') return `${apiBasePath.client}/`;
  if (path.startsWith('/edge/v1/') || path === '/edge/v1') return apiBasePath.client + path.slice('/edge/v1'.length);
  if (path === '/.well-known/est/cacerts') return `${apiBasePath.client}/.well-known/est/cacerts`;
  if (path.startsWith('/edge/') || path.startsWith('/fabric/') || path.startsWith('/.well-known/')) return path;
  return apiBasePath.client + path;
}

export function apiOfPath(path: string): ApiName {
  return path.startsWith(apiBasePath.management) ? 'management' : 'client';
}
