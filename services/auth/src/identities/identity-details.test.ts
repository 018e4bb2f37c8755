import { ApiError, type PendingEnrollment, authCallContracts } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import type { CredentialService, EnrollmentPort } from '../credentials/credentials.domain.ts';
import { type IdentityView, newIdentity } from '../shared/model.domain.ts';
import type { AuthStores, SessionStore } from '../shared/stores.ports.ts';
import { authCalls } from '../shared/calls.transport.ts';
import { IdentityService } from './identities.domain.ts';
import { identityDetailsOf } from './identities.transport.ts';

/**
 * The `identityDetails` call (policy's association lists, issue 31): identities by id, shown as
 * `GET /identities/{id}` shows them, in the order asked; unknown ids are left out.
 */
const createdAt = new Date('2024-05-01T10:00:00.000Z');

function view(id: string, extras: Partial<IdentityView> = {}): IdentityView {
  return {
    identity: newIdentity({ id, name: `name-${id}`, authPolicyId: 'default', createdAt, envInfo: { os: id } }),
    authPolicyName: 'Default',
    authenticators: [{ id: `a-${id}`, method: 'updb', username: `user-${id}`, certFingerprint: null }],
    isMfaEnabled: false,
    hasOutstandingEnrollment: false,
    ...extras,
  };
}

/** An identity service over a store that knows `views` (answered in reverse, as a store may). */
function identitiesOver(views: IdentityView[]) {
  const asked: string[][] = [];
  const identities = {
    getViews: async (ids: string[]) => {
      asked.push(ids);
      return views.filter((v) => ids.includes(v.identity.id)).reverse();
    },
  };
  const read = <T>(fn: (s: AuthStores) => Promise<T>) => fn({ identities } as unknown as AuthStores);
  return { service: new IdentityService(read, {} as SessionStore, 1800, undefined, undefined, read), asked };
}

const pending: PendingEnrollment = {
  id: 'e1',
  method: 'ott',
  token: 'tok',
  jwt: 'jwt',
  expiresAt: '2024-05-02T10:00:00.000Z',
  caId: null,
  caName: null,
};

function enrollmentsKnowing(byIdentity: Record<string, PendingEnrollment[]>) {
  const asked: string[][] = [];
  const port: EnrollmentPort = {
    createForIdentity: () => Promise.reject(new Error('not used')),
    deleteForIdentity: () => Promise.reject(new Error('not used')),
    pendingFor: async (ids) => {
      asked.push(ids);
      return Object.fromEntries(ids.flatMap((id) => (byIdentity[id] ? [[id, byIdentity[id]]] : [])));
    },
  };
  return { port, asked };
}

const withSessions = (ids: string[]) => ({
  identitiesWithApiSessions: async (asked: string[]) => new Set(asked.filter((id) => ids.includes(id))),
  verifySecondary: () => Promise.reject(new Error('not used')),
  apiSessionIdsOf: () => Promise.reject(new Error('not used')),
});

describe('IdentityService.views', () => {
  it('answers the views in the order of the ids, each once, leaving unknown ids out', async () => {
    const { service, asked } = identitiesOver([view('a'), view('b'), view('c')]);
    const ids = (await service.views(['c', 'nobody', 'a', 'c', 'b'])).map((v) => v.identity.id);
    expect(ids).toEqual(['c', 'a', 'b']);
    expect(asked).toHaveLength(1);
  });

  it('reads nothing for no ids', async () => {
    const { service, asked } = identitiesOver([view('a')]);
    expect(await service.views([])).toEqual([]);
    expect(asked).toEqual([]);
  });
});

describe('identityDetails (auth call)', () => {
  const views = [view('a'), view('b', { hasOutstandingEnrollment: true, isMfaEnabled: true }), view('c')];

  it('answers each known identity as its management detail does, in the order asked', async () => {
    const { service } = identitiesOver(views);
    const enrollments = enrollmentsKnowing({ b: [pending] });
    const deps = { authentication: withSessions(['a']), enrollments: enrollments.port };
    const table = authCalls({ ...deps, credentials: {} as CredentialService, identities: service });

    const reply = (await table[authCallContracts.identityDetails.action]!({ ids: ['b', 'gone', 'a'] })) as {
      details: Record<string, unknown>[];
    };
    // Only the identity with an outstanding enrollment was asked about at pki-enrollment.
    expect(enrollments.asked).toEqual([['b']]);
    // The very detail `GET /identities/{id}` answers for each.
    const direct = await identityDetailsOf(deps, [views[1]!, views[0]!]);
    expect(reply.details).toEqual(direct);
    expect(reply.details.map((d) => d.id)).toEqual(['b', 'a']);
    expect(reply.details[0]).toMatchObject({
      hasApiSession: false,
      isMfaEnabled: true,
      enrollment: { ott: { id: 'e1', jwt: 'jwt', token: 'tok' } },
      authenticators: { updb: { id: 'a-b', username: 'user-b' } },
      authPolicy: { id: 'default', name: 'Default' },
      envInfo: { os: 'b' },
    });
    expect(reply.details[1]).toMatchObject({ hasApiSession: true, enrollment: {} });
    // The reply is what the contract declares.
    expect(authCallContracts.identityDetails.reply.parse(reply)).toEqual(reply);
  });

  it('refuses more than 1000 ids at once', async () => {
    const { service } = identitiesOver(views);
    const table = authCalls({
      authentication: withSessions([]),
      credentials: {} as CredentialService,
      identities: service,
    });
    const ids = Array.from({ length: 1001 }, (_, i) => `i${i}`);
    const refused = await table[authCallContracts.identityDetails.action]!({ ids }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe('COULD_NOT_VALIDATE');
  });
});
