import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import type { ListInput } from '@ziti/platform/list-page';
import { ClientEdgeRouterService, UnissuedServiceAccessTokens } from './client-edge-routers.domain.ts';
import type { ClientEdgeRouterStore, ServiceAccessTokens } from './client-edge-routers.ports.ts';

/**
 * The `session-token` rule of client `GET /services/{id}/edge-routers` (reference 1.1.9
 * `service_router.go listClientEdgeRouters`): a token given is checked first and a bad one is 401
 * UNAUTHORIZED with the reason; this controller has issued none yet, so every one is refused.
 */
const caller = { identityId: 'i1', apiSessionId: 'as1', isAdmin: false };
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

function service(visible: boolean) {
  const asked: { input?: ListInput; visible?: number } = { visible: 0 };
  const store: ClientEdgeRouterStore = {
    verifiedEdgeRouters: async () => {
      throw new Error('not used');
    },
    serviceVisible: async () => {
      asked.visible!++;
      return visible;
    },
    sharedEdgeRouters: async (_i, _s, input) => {
      asked.input = input;
      return { items: [], totalCount: 0, pagination: { limit: 25, offset: 0 }, filterableFields: [] };
    },
  };
  return { svc: new ClientEdgeRouterService((fn) => fn(store)), asked };
}

async function rejected(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  return err as ApiError;
}

describe('client service edge routers', () => {
  it('no token (or an empty header): the routers, 25 connected first by default as the reference lists them', async () => {
    const { svc, asked } = service(true);
    await svc.serviceEdgeRouters(caller, 's1', undefined, {});
    expect(asked.input).toEqual({ limit: 25, sort: 'connected desc' });
    await svc.serviceEdgeRouters(caller, 's1', '', { limit: '3', filter: 'true', sort: 'name' });
    expect(asked.input).toEqual({ limit: '3', filter: 'true', sort: 'name' });
  });

  it('a token given is refused with 401 and its reason before the service is looked up', async () => {
    const { svc, asked } = service(true);
    const cases: [string, string][] = [
      ['4f2d0d6e-1b0a-4a53-9d7e-2d0e3c1f4a5b', 'token is malformed: token contained an invalid number of segments'],
      ['a.b', 'token is malformed: token contained an invalid number of segments'],
      [`!!.${b64({})}.sig`, 'token is malformed: could not base64 decode header'],
      [`${b64('x').slice(0, 2)}.${b64({})}.sig`, 'token is malformed: could not JSON decode header'],
      [
        `${b64({ kid: 'k' })}.${Buffer.from('{').toString('base64url')}.sig`,
        'token is malformed: could not JSON decode claim',
      ],
      [
        `${b64({ alg: 'RS256' })}.${b64({ sub: 'x' })}.sig`,
        'token is unverifiable: error while executing keyfunc: missing kid in token',
      ],
      [
        `${b64({ alg: 'RS256', kid: 'k1' })}.${b64({ sub: 'x' })}.sig`,
        'token is unverifiable: error while executing keyfunc: invalid kid: k1',
      ],
    ];
    for (const [token, reason] of cases) {
      const err = await rejected(svc.serviceEdgeRouters(caller, 's1', token, {}));
      expect(err.code, token).toBe('UNAUTHORIZED');
      expect(err.cause).toEqual({ code: 'UNHANDLED', message: reason });
    }
    expect(asked.visible).toBe(0);
  });

  it('a service the caller can not see is NOT_FOUND without a cause', async () => {
    const err = await rejected(service(false).svc.serviceEdgeRouters(caller, 's1', undefined, {}));
    expect(err.code).toBe('NOT_FOUND');
    expect(err.cause).toBeUndefined();
  });

  it('the default token check never accepts a token', async () => {
    const tokens: ServiceAccessTokens = new UnissuedServiceAccessTokens();
    expect(await tokens.rejection(`${b64({ kid: 'x' })}.${b64({})}.x`, 'as1')).toContain('invalid kid');
  });
});
