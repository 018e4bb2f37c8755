import { ApiError, subjects } from '@ziti/contracts';
import { type Bus, InProcessBus, NoRespondersError, RequestTimeoutError } from '@ziti/platform';
import { describe, expect, it } from 'vitest';
import type { PostureEvaluationReader, PostureEvaluator } from '../posture/posture-evaluation.ports.ts';
import { FabricCircuitPaths } from './fabric-route-paths.adapter.ts';
import { sessionUseVerdict } from './session-use.domain.ts';
import { type Session, SessionService, decideCreation } from './sessions.domain.ts';
import type { CircuitPaths, CreationFacts, SessionStore, SessionUseFacts } from './sessions.ports.ts';

const session: Session = {
  id: 'sess-1',
  token: 'tok-1',
  apiSessionId: 'as-1',
  identityId: 'i-1',
  serviceId: 'svc-1',
  type: 'Dial',
  tags: {},
  createdAt: new Date(0),
  updatedAt: new Date(0),
};

/** A session service over a store that knows one session, and the given router edge. */
function service(circuits: CircuitPaths) {
  const store = {
    get: async (id: string) => (id === session.id ? session : undefined),
    serviceNames: async () => new Map([[session.serviceId, 'svc']]),
    sharedEdgeRouters: async () => [],
  } as unknown as SessionStore;
  const work = <T>(fn: (s: SessionStore) => Promise<T>) => fn(store);
  return new SessionService(work, work, {} as PostureEvaluator, circuits, work as unknown as PostureEvaluationReader);
}

/** A router edge that answers `paths`, recording what it was asked. */
function fabric(answer: () => Promise<Record<string, string[]> | undefined>) {
  const asked: string[][] = [];
  const circuits: CircuitPaths = {
    routePaths: async (ids) => {
      asked.push(ids);
      return answer();
    },
  };
  return { circuits, asked };
}

const owner = { identityId: 'i-1', isAdmin: false };

describe('GET /sessions/{id}/route-path', () => {
  it('is the path fabric holds for the session, asked once the caller may see the session', async () => {
    const { circuits, asked } = fabric(async () => ({ 'sess-1': ['r-1', 'r-2'], other: ['r-9'] }));
    expect(await service(circuits).routePath(owner, 'sess-1')).toEqual(['r-1', 'r-2']);
    expect(await service(circuits).routePath({ identityId: 'admin', isAdmin: true }, 'sess-1')).toEqual(['r-1', 'r-2']);
    expect(asked).toEqual([['sess-1'], ['sess-1']]);
  });

  it('is [] when the session has no circuit, and when no router edge answers (none deployed: no router connected)', async () => {
    expect(await service(fabric(async () => ({})).circuits).routePath(owner, 'sess-1')).toEqual([]);
    expect(await service(fabric(async () => undefined).circuits).routePath(owner, 'sess-1')).toEqual([]);
  });

  it('a session the caller may not see is NOT_FOUND before fabric is asked', async () => {
    const { circuits, asked } = fabric(async () => ({ 'sess-1': ['r-1'] }));
    for (const id of ['sess-1', 'nope']) {
      const err = await service(circuits)
        .routePath(id === 'nope' ? owner : { identityId: 'i-2', isAdmin: false }, id)
        .catch((e: unknown) => e);
      expect((err as ApiError).code).toBe('NOT_FOUND');
    }
    expect(asked).toEqual([]);
  });

  it('a router edge that does not answer in time is an error, not an empty path', async () => {
    const timeout = new ApiError('TIMEOUT');
    const err = await service(
      fabric(async () => {
        throw timeout;
      }).circuits,
    )
      .routePath(owner, 'sess-1')
      .catch((e: unknown) => e);
    expect(err).toBe(timeout);
  });
});

describe('the fabric adapter of the route path', () => {
  const failing = (error: Error): Bus =>
    ({
      request: async () => {
        throw error;
      },
    }) as unknown as Bus;

  it('asks fabric.routePaths and answers its paths', async () => {
    const bus = new InProcessBus();
    const seen: unknown[] = [];
    bus.serve(subjects.call('fabric', 'fabric.routePaths'), 'ziti-fabric', async (payload) => {
      seen.push(payload);
      return { paths: { 'sess-1': ['r-1'] } };
    });
    expect(await new FabricCircuitPaths(bus).routePaths(['sess-1'])).toEqual({ 'sess-1': ['r-1'] });
    expect(seen).toEqual([{ sessionIds: ['sess-1'] }]);
    await bus.close();
  });

  it('no fabric (no responders) is undefined; a timeout stays TIMEOUT', async () => {
    const subject = subjects.call('fabric', 'fabric.routePaths');
    expect(await new FabricCircuitPaths(failing(new NoRespondersError(subject))).routePaths(['s'])).toBeUndefined();
    const err = await new FabricCircuitPaths(failing(new RequestTimeoutError(subject)))
      .routePaths(['s'])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('TIMEOUT');
  });
});

describe('the verdict on an edge session used through a router', () => {
  const allowed: SessionUseFacts = {
    session: { id: 'sess-1', apiSessionId: 'as-1', identityId: 'i-1', serviceId: 'svc-1', type: 'Dial' },
    apiSessionEnded: false,
    identityLive: true,
    identityIsAdmin: false,
    serviceLive: true,
    identityReachesRouter: true,
    serviceReachesRouter: true,
    typePermitted: true,
  };
  const verdict = (over: Partial<SessionUseFacts>, type: 'Dial' | 'Bind' = 'Dial') =>
    sessionUseVerdict({ ...allowed, ...over }, type).outcome;

  it('allows when every check passes, naming the session', () => {
    expect(sessionUseVerdict(allowed, 'Dial')).toEqual({ outcome: 'allowed', session: allowed.session });
  });

  it('refuses in order: the session, its type, the service and the access to it, then the router', () => {
    expect(sessionUseVerdict(undefined, 'Dial').outcome).toBe('invalidSession');
    expect(verdict({ apiSessionEnded: true, identityLive: false, serviceLive: false })).toBe('invalidSession');
    expect(verdict({ identityLive: false })).toBe('invalidSession');
    expect(verdict({ serviceLive: false, identityReachesRouter: false }, 'Bind')).toBe('wrongSessionType');
    expect(verdict({ serviceLive: false, identityReachesRouter: false })).toBe('invalidService');
    expect(verdict({ typePermitted: false, serviceReachesRouter: false })).toBe('invalidService');
    expect(verdict({ identityReachesRouter: false })).toBe('invalidEdgeRouter');
    expect(verdict({ serviceReachesRouter: false })).toBe('invalidEdgeRouter');
  });

  it('spares administrators the access check (the reference enforcer does), not the router check', () => {
    expect(verdict({ typePermitted: false, identityIsAdmin: true })).toBe('allowed');
    expect(verdict({ typePermitted: false, identityIsAdmin: true, serviceReachesRouter: false })).toBe(
      'invalidEdgeRouter',
    );
    expect(verdict({ serviceLive: false, identityIsAdmin: true })).toBe('invalidService');
  });
});

describe('decideCreation: one decision over the facts, in the reference order', () => {
  const facts = (o: Partial<CreationFacts> = {}): CreationFacts => ({
    access: { service: { name: 'svc' } as CreationFacts['access']['service'], dial: true, bind: false },
    edgeRouters: [{ id: 'r-1' } as CreationFacts['edgeRouters'][number]],
    postureChecked: false,
    ...o,
  });

  it('refuses what is not visible, then a type no policy permits, before anything else', () => {
    expect(decideCreation(undefined, 'Dial', 'unknown')).toEqual({ outcome: 'notVisible' });
    expect(decideCreation(facts({ existing: session, postureChecked: true }), 'Bind', 'unknown')).toEqual({
      outcome: 'typeNotPermitted',
    });
  });

  it('answers the existing session before posture or routers are looked at', () => {
    expect(
      decideCreation(facts({ existing: session, postureChecked: true, edgeRouters: [] }), 'Dial', 'unknown'),
    ).toEqual({ outcome: 'existing', session });
  });

  it('asks for posture only when a granting policy names checks, and decides again with the result', () => {
    const checked = facts({ postureChecked: true });
    expect(decideCreation(checked, 'Dial', 'unknown')).toEqual({ outcome: 'evaluatePosture' });
    expect(decideCreation(checked, 'Dial', 'failed')).toEqual({ outcome: 'postureFailed' });
    expect(decideCreation(checked, 'Dial', 'passed')).toEqual({ outcome: 'insert' });
    expect(decideCreation(facts(), 'Dial', 'unknown')).toEqual({ outcome: 'insert' });
  });

  it('needs a shared edge router, after posture', () => {
    expect(decideCreation(facts({ edgeRouters: [], postureChecked: true }), 'Dial', 'failed')).toEqual({
      outcome: 'postureFailed',
    });
    expect(decideCreation(facts({ edgeRouters: [] }), 'Dial', 'unknown')).toEqual({ outcome: 'noEdgeRouters' });
  });
});
