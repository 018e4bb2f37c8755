import { randomUUID } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import type { ListInput, ListPage } from '@ziti/platform/list-page';
import { base62Uuid } from '@ziti/platform/ids';
import type { PolicyPostureFailure, PostureEvaluator } from '../posture-checks/posture-evaluation.ports.ts';
import type { EdgeRouterWithPresence } from '../read-models/read-models.ports.ts';
import type { Viewer } from '../services/service-view.domain.ts';
import type { CircuitPaths, SessionWork } from './sessions.ports.ts';

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

export interface SessionCaller extends Viewer {
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
    private readonly now: () => Date = () => new Date(),
  ) {}

  async create(
    caller: SessionCaller,
    input: { serviceId?: string; type?: string; tags?: Record<string, unknown> },
  ): Promise<{ view: SessionView }> {
    const serviceId = input.serviceId ?? '';
    const type: SessionType = input.type === 'Bind' ? 'Bind' : 'Dial';
    const at = this.now();
    const candidate: Session = {
      id: base62Uuid(),
      token: randomUUID(),
      apiSessionId: caller.apiSessionId,
      identityId: caller.identityId,
      serviceId,
      type,
      tags: input.tags ?? {},
      createdAt: at,
      updatedAt: at,
    };
    // Visible and permitted (read models, outside any transaction), an existing session to reuse,
    // the shared routers and whether posture applies — and, when none of them stands in the way,
    // the insert: one statement (its own transaction) on the common path.
    const { context, created: inserted } = await this.read((s) =>
      s.createIfClear(
        caller,
        serviceId,
        { apiSessionId: caller.apiSessionId, type },
        sessionEdgeRouterLimit,
        candidate,
      ),
    );
    if (!context) throw ApiError.notFound('service', serviceId);
    const { access, existing: reused, edgeRouters: routers } = context;
    if (!(type === 'Dial' ? access.dial : access.bind))
      throw new ApiError('COULD_NOT_VALIDATE', { field: 'ServiceId', reason: 'service not found', value: serviceId });
    if (reused) return { view: { session: reused, serviceName: access.service.name, edgeRouters: routers } };
    if (inserted === 'ended') throw new ApiError('UNAUTHORIZED');
    if (inserted) return { view: { session: inserted, serviceName: access.service.name, edgeRouters: routers } };
    // A granting policy that names no check passes; the checks are evaluated only when one names some.
    const evaluated = context.postureChecked
      ? await this.posture.evaluate(caller, [serviceId], type)
      : new Map<string, { isPassing: boolean }[]>();
    const results = evaluated.get(serviceId) ?? [];
    if (results.length > 0 && !results.some((r) => r.isPassing)) {
      const failures = await this.posture.failures(caller, serviceId, type);
      await this.work((s) =>
        s.recordFailure(
          caller.identityId,
          {
            apiSessionId: caller.apiSessionId,
            serviceId,
            serviceName: access.service.name,
            sessionType: type,
            policyFailures: failures,
            when: this.now(),
          },
          failedRequestHistory,
        ),
      );
      throw new ApiError('INVALID_POSTURE', postureRefusalCause(failures));
    }
    if (routers.length === 0) throw new ApiError('NO_EDGE_ROUTERS_AVAILABLE');
    // Posture passed: one statement (its own transaction), no BEGIN/COMMIT round trips.
    const session = await this.read((s) => s.createIfLive(candidate));
    if (session === 'ended') throw new ApiError('UNAUTHORIZED');
    return { view: { session, serviceName: access.service.name, edgeRouters: routers } };
  }

  /** Administrators see every session; others only those of their own API sessions (404 otherwise). */
  list(caller: Viewer, input: ListInput): Promise<ListPage<SessionView>> {
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

  async get(caller: Viewer, id: string, withPolicies = false): Promise<SessionView> {
    const session = await this.read((s) => s.get(id));
    if (!session || (!caller.isAdmin && session.identityId !== caller.identityId))
      throw ApiError.notFound('session', id);
    const view = await this.viewOf(session);
    if (!withPolicies) return view;
    const policies = await this.read((s) => s.grantingPolicies(session.identityId, session.serviceId, session.type));
    return { ...view, servicePolicies: policies.map((p) => ({ id: p.policyId, name: p.name })) };
  }

  async delete(caller: Viewer, id: string): Promise<void> {
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
  async routePath(caller: Viewer, id: string): Promise<string[]> {
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
