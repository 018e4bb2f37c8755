import { ApiError } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { ClientEdgeRouterReader, ServiceAccessTokens } from './client-edge-routers.ports.ts';

/** The caller of a client operation, as the gateway established it from the API session. */
export interface ClientCaller {
  identityId: string;
  apiSessionId: string;
  isAdmin: boolean;
}

const base64url = /^[A-Za-z0-9_-]*$/;
const decodeJson = (segment: string): unknown => JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));

/**
 * This controller creates sessions (`POST /sessions`), but their tokens are UUIDs (the legacy
 * session token): it has no OIDC API sessions, the only ones the reference signs a service access
 * token for, so it has issued no service access token and publishes no key one could be verified
 * with. Every token is refused, with the reason the reference's JWT parser (golang-jwt v5) gives for
 * a token it can not read or whose key it does not know; a session's UUID token is malformed there
 * too. When OIDC API sessions sign service access tokens, an implementation over their signing keys
 * and the revocations replaces this one (the checks `ServiceAccessTokens` lists).
 */
export class UnissuedServiceAccessTokens implements ServiceAccessTokens {
  async rejection(token: string): Promise<string | undefined> {
    const parts = token.split('.');
    if (parts.length !== 3) return 'token is malformed: token contained an invalid number of segments';
    if (!base64url.test(parts[0]!)) return 'token is malformed: could not base64 decode header';
    let header: unknown;
    try {
      header = decodeJson(parts[0]!);
    } catch {
      return 'token is malformed: could not JSON decode header';
    }
    if (!base64url.test(parts[1]!)) return 'token is malformed: could not base64 decode claim';
    try {
      decodeJson(parts[1]!);
    } catch {
      return 'token is malformed: could not JSON decode claim';
    }
    const kid = typeof header === 'object' && header !== null ? (header as { kid?: unknown }).kid : undefined;
    if (typeof kid !== 'string' || kid === '')
      return 'token is unverifiable: error while executing keyfunc: missing kid in token';
    return `token is unverifiable: error while executing keyfunc: invalid kid: ${kid}`;
  }
}

/**
 * The reference answers at most 25 routers for a service (`ListForIdentityAndServiceWithTx`, `LIMIT
 * 25`, connected first); here the list pages like the others, 25 being the default page size.
 */
export const serviceEdgeRouterDefaultLimit = 25;
/** Its order when the caller names none (`SORT BY connected DESC`; then by id, every list's tie-breaker). */
export const serviceEdgeRouterDefaultSort = 'connected desc';

/**
 * Client `GET /current-identity/edge-routers` and `GET /services/{id}/edge-routers` (ZITI-FACTS
 * §6.3, §12.2; reference `current_identity_router.go listEdgeRouters`, `service_router.go
 * listClientEdgeRouters`, `edge_router_manager.go ListForIdentityAndServiceWithTx`).
 */
export class ClientEdgeRouterService {
  constructor(
    private readonly read: ClientEdgeRouterReader,
    private readonly tokens: ServiceAccessTokens = new UnissuedServiceAccessTokens(),
  ) {}

  /** Admins: every verified router; others: the verified routers of their edge-router policies. */
  currentIdentityEdgeRouters(caller: ClientCaller, input: ListInput): Promise<ListPage<EdgeRouterWithPresence>> {
    return this.read((s) => s.verifiedEdgeRouters(caller.isAdmin ? undefined : caller.identityId, input));
  }

  /**
   * The routers the caller may use for the service: in its edge-router policies and the service's
   * service-edge-router policies, enrolled or not (as the reference, which does not filter them).
   * A service the caller can not see is NOT_FOUND without a cause, as the reference answers.
   */
  async serviceEdgeRouters(
    caller: ClientCaller,
    serviceId: string,
    sessionToken: string | undefined,
    input: ListInput,
  ): Promise<ListPage<EdgeRouterWithPresence>> {
    if (sessionToken !== undefined && sessionToken !== '') {
      const reason = await this.tokens.rejection(sessionToken, caller.apiSessionId);
      if (reason !== undefined) throw new ApiError('UNAUTHORIZED', reason);
    }
    const paged = {
      ...input,
      ...(input.limit === undefined ? { limit: serviceEdgeRouterDefaultLimit } : {}),
      ...(input.sort === undefined ? { sort: serviceEdgeRouterDefaultSort } : {}),
    };
    return this.read(async (s) => {
      if (!(await s.serviceVisible(serviceId, caller.identityId, caller.isAdmin))) throw new ApiError('NOT_FOUND');
      return s.sharedEdgeRouters(caller.identityId, serviceId, paged);
    });
  }
}
