import { randomUUID } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { base62Uuid } from '@ziti/platform/ids';
import type {
  PolicyPostureFailure,
  PostureEvaluationReader,
  PostureEvaluator,
} from '../posture/posture-evaluation.ports.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { CircuitPaths, CreationFacts, SessionWork } from './sessions.ports.ts';

export type SessionType = 'Dial' | 'Bind';

/** An edge session (ZITI-FACTS §10.1): the right of one API session to dial or bind one service. */
export interface Session {
  id: string;
  token: string;
  apiSessionId: string;
  identityId: string;
  serviceId: string;
  type: SessionType;
  tags: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
}

/** A session with what its detail shows: the service's name and the edge routers it may use. */
export interface SessionView {
  session: Session;
  serviceName: string;
  /** Each with its presence (`isOnline`, `hostname`, URLs), connected first. */
  edgeRouters: EdgeRouterWithPresence[];
  /** Management detail only: the service policies of the session's type that grant it. */
  servicePolicies?: { id: string; name: string }[];
}

/** A refused session creation for posture (`/identities/{id}/failed-service-requests`). */
export interface FailedServiceRequest {
  apiSessionId: string;
  serviceId: string;
  serviceName: string;
  sessionType: SessionType;
  policyFailures: PolicyPostureFailure[];
  when: Date;
}

/** At most this many edge routers in a session (the reference's LIMIT 25). */
export const sessionEdgeRouterLimit = 25;
/** Refused requests kept per identity. */
export const failedRequestHistory = 20;

/** Who asks about sessions: an identity, and whether it is an administrator (who sees every session). */
export interface SessionViewer {
  identityId: string;
  isAdmin: boolean;
}

export interface SessionCaller extends SessionViewer {
  apiSessionId: string;
}

/**
 * Edge sessions: created for a visible service of a permitted type whose posture passes and that
 * shares an edge router with the identity (ZITI-FACTS §6.3, §10.1), one per API session, service and
 * type; ended with their API session (the consumer of auth's apiSession events calls `apiSessionEnded`).
 */
export class SessionService {
  constructor(
    /** A transaction (several statements that commit together). */
    private readonly work: SessionWork,
    /** The pool, outside any transaction: reads, and writes of one statement. */
    private readonly read: SessionWork,
    private readonly posture: PostureEvaluator,
    /** The router edge's circuits (`route-path`). */
    private readonly circuits: CircuitPaths,
    /** The service policies granting an identity a service (a session's management detail). */
    private readonly grants: PostureEvaluationReader,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async create(
    caller: SessionCaller,
    input: { serviceId?: string; type?: string; tags?: Record<string, unknown> },
  ): Promise<{ view: SessionView }> {
    const serviceId = input.serviceId ?? '';
    const type: SessionType = input.type === 'Bind' ? 'Bind' : 'Dial';
    // The facts, read in one statement outside any transaction (grouped with concurrent creations).
    const facts = await this.read((s) =>
      s.creationFacts(caller, serviceId, { apiSessionId: caller.apiSessionId, type }, sessionEdgeRouterLimit),
    );
    const first = decideCreation(facts, type, 'unknown');
    const decision =
      first.outcome === 'evaluatePosture'
        ? decideCreation(facts, type, await this.postureOf(caller, serviceId, type))
        : first;
    const viewOf = (session: Session): { view: SessionView } => ({
      view: { session, serviceName: facts!.access.service.name, edgeRouters: facts!.edgeRouters },
    });
    switch (decision.outcome) {
      case 'notVisible':
        throw ApiError.notFound('service', serviceId);
      case 'typeNotPermitted':
        throw new ApiError('COULD_NOT_VALIDATE', { field: 'ServiceId', reason: 'service not found', value: serviceId });
      case 'existing':
        return viewOf(decision.session);
      case 'postureFailed': {
        const failures = await this.posture.failures(caller, serviceId, type);
        await this.work((s) =>
          s.recordFailure(
            caller.identityId,
            {
              apiSessionId: caller.apiSessionId,
              serviceId,
              serviceName: facts!.access.service.name,
              sessionType: type,
              policyFailures: failures,
              when: this.now(),
            },
            failedRequestHistory,
          ),
        );
        throw new ApiError('INVALID_POSTURE', postureRefusalCause(failures));
      }
      case 'noEdgeRouters':
        throw new ApiError('NO_EDGE_ROUTERS_AVAILABLE');
      case 'insert': {
        const at = this.now();
        // One statement (its own transaction, grouped with concurrent inserts): the session of
        // another request of the same API session when that one came first; 'ended' when the API
        // session ended before it.
        const session = await this.read((s) =>
          s.createIfLive({
            id: base62Uuid(),
            token: randomUUID(),
            apiSessionId: caller.apiSessionId,
            identityId: caller.identityId,
            serviceId,
            type,
            tags: input.tags ?? {},
            createdAt: at,
            updatedAt: at,
          }),
        );
        if (session === 'ended') throw new ApiError('UNAUTHORIZED');
        return viewOf(session);
      }
    }
  }

  /** Whether the caller's posture passes a policy of `type` granting the service (one passing policy is enough). */
  private async postureOf(caller: SessionCaller, serviceId: string, type: SessionType): Promise<'passed' | 'failed'> {
    const results = (await this.posture.evaluate(caller, [serviceId], type)).get(serviceId) ?? [];
    return results.length > 0 && !results.some((r) => r.isPassing) ? 'failed' : 'passed';
  }

  /** Administrators see every session; others only those of their own API sessions (404 otherwise). */
  list(caller: SessionViewer, input: ListInput): Promise<ListPage<SessionView>> {
    return this.read(async (s) => {
      const page = await s.list(input, caller.isAdmin ? {} : { identityId: caller.identityId });
      const names = await s.serviceNames([...new Set(page.items.map((x) => x.serviceId))]);
      const items: SessionView[] = [];
      for (const session of page.items)
        items.push({
          session,
          serviceName: names.get(session.serviceId) ?? '',
          edgeRouters: await s.sharedEdgeRouters(session.identityId, session.serviceId, sessionEdgeRouterLimit),
        });
      return { ...page, items };
    });
  }

  async get(caller: SessionViewer, id: string, withPolicies = false): Promise<SessionView> {
    const session = await this.read((s) => s.get(id));
    if (!session || (!caller.isAdmin && session.identityId !== caller.identityId))
      throw ApiError.notFound('session', id);
    const view = await this.viewOf(session);
    if (!withPolicies) return view;
    const policies = await this.grants((s) =>
      s.grantingPolicies(session.identityId, [session.serviceId], session.type),
    );
    return { ...view, servicePolicies: policies.map((p) => ({ id: p.policyId, name: p.policyName })) };
  }

  async delete(caller: SessionViewer, id: string): Promise<void> {
    await this.get(caller, id);
    await this.work((s) => s.delete(id));
  }

  /**
   * `/sessions/{id}/route-path`: the routers of its live circuit's path, in path order (reference
   * `session_router.go DetailRoutePath`: the path of its first circuit that has one, `[]` when none),
   * once the session is known to be the caller's. Without a router edge to ask (none deployed or
   * up), no router is connected, so there is no circuit: `[]`. A router edge that does not answer in
   * time is an error (TIMEOUT), not an empty path.
   */
  async routePath(caller: SessionViewer, id: string): Promise<string[]> {
    await this.get(caller, id);
    const paths = await this.circuits.routePaths([id]);
    return paths?.[id] ?? [];
  }

  async failedRequests(identityId: string): Promise<FailedServiceRequest[]> {
    return this.read(async (s) => {
      if (!(await s.identityExists(identityId))) throw ApiError.notFound('identity', identityId);
      return s.failures(identityId);
    });
  }

  private async viewOf(session: Session): Promise<SessionView> {
    return this.read(async (s) => ({
      session,
      serviceName: (await s.serviceNames([session.serviceId])).get(session.serviceId) ?? '',
      edgeRouters: await s.sharedEdgeRouters(session.identityId, session.serviceId, sessionEdgeRouterLimit),
    }));
  }
}

/**
 * What a session creation comes to, decided in one place over the facts the store read
 * (ZITI-FACTS §6.3, §10.1), in the reference's order: the service must be visible (404), the type
 * permitted by a service policy (COULD_NOT_VALIDATE); the session the API session already has for
 * the service and type is answered again; a granting policy that names posture checks needs the
 * caller's posture evaluated (`evaluatePosture`, then decided again with the result), and one
 * that names none passes; a session needs an edge router both reach; then it is inserted.
 */
export type CreationDecision =
  | { outcome: 'notVisible' }
  | { outcome: 'typeNotPermitted' }
  | { outcome: 'existing'; session: Session }
  | { outcome: 'evaluatePosture' }
  | { outcome: 'postureFailed' }
  | { outcome: 'noEdgeRouters' }
  | { outcome: 'insert' };

/** Decided with the caller's posture known: never `evaluatePosture`. */
export type PostureKnownDecision = Exclude<CreationDecision, { outcome: 'evaluatePosture' }>;

export function decideCreation(
  facts: CreationFacts | undefined,
  type: SessionType,
  posture: 'passed' | 'failed',
): PostureKnownDecision;
export function decideCreation(
  facts: CreationFacts | undefined,
  type: SessionType,
  posture: 'unknown',
): CreationDecision;
export function decideCreation(
  facts: CreationFacts | undefined,
  type: SessionType,
  posture: 'unknown' | 'passed' | 'failed',
): CreationDecision {
  if (!facts) return { outcome: 'notVisible' };
  if (!(type === 'Dial' ? facts.access.dial : facts.access.bind)) return { outcome: 'typeNotPermitted' };
  if (facts.existing) return { outcome: 'existing', session: facts.existing };
  if (facts.postureChecked && posture === 'unknown') return { outcome: 'evaluatePosture' };
  if (facts.postureChecked && posture === 'failed') return { outcome: 'postureFailed' };
  if (facts.edgeRouters.length === 0) return { outcome: 'noEdgeRouters' };
  return { outcome: 'insert' };
}

/**
 * The cause a refused client is shown, as the reference words it: the failing policies and, per
 * policy, each failing check's id and type only. What the checks expected and what the client
 * reported stay in the failed-service-requests list, which only administrators read.
 */
export function postureRefusalCause(failures: PolicyPostureFailure[]): {
  message: string;
  data: Record<string, { id: string; typeId: string; isPassing: false }[]>;
} {
  return {
    message: `Failed to pass posture checks for service policies: [${failures.map((f) => f.policyId).join(' ')}]`,
    data: Object.fromEntries(
      failures.map((f) => [
        f.policyId,
        f.checks.map((c) => ({ id: c.postureCheckId, typeId: c.postureCheckType, isPassing: false as const })),
      ]),
    ),
  };
}
