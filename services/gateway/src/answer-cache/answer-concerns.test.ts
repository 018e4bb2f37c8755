import {
  authenticationEventTypes,
  eventTypes,
  inventoryEventTypes,
  policyEventTypes,
  routerPresenceEventTypes,
} from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { AnswerCache, type AnswerCacheEvent } from './answer-cache.domain.ts';
import { answerConcerns, answerSources, keptAnswerOf, serviceAnswerConcerns } from './answer-concerns.domain.ts';

const ev = (source: string, sequence: number, type: string, data: unknown): AnswerCacheEvent => ({
  source,
  sequence,
  type,
  data,
});

/** A batch of attempts as auth publishes it (docs/adr/0021): one of them by the identity whose answer is kept. */
const attempts = (sequence: number) =>
  ev('auth', sequence, authenticationEventTypes.authenticationAttempted.type, {
    attempts: [
      {
        method: 'password',
        outcome: 'succeeded',
        identityId: 'i1',
        apiSessionId: 's1',
        at: '2026-11-27T10:00:00.000Z',
        meta: { requestId: 'r1', operation: 'client.authenticate', remoteAddress: '127.0.0.1' },
      },
      { method: 'password', outcome: 'failed', reason: 'INVALID_AUTH', at: '2026-11-27T10:00:00.001Z' },
    ],
  });

describe('which kept answers an event of auth concerns', () => {
  it('authentication.attempted concerns none (a login announces what it changes on its own)', () => {
    expect(answerConcerns(attempts(7))).toBeUndefined();
    // What a login changes still drops the identity's answer; a type this build does not know, all.
    expect(answerConcerns(ev('auth', 8, eventTypes.identityUpdated.type, { id: 'i1' }))).toBe('i1');
    expect(answerConcerns(ev('auth', 9, 'somethingNew.happened', {}))).toBe('all');
  });

  it('a storm of attempt batches keeps every answer, and the positions go on', () => {
    const cache = new AnswerCache({ sources: [...answerSources], concerns: answerConcerns, maxEntries: 10 });
    cache.start();
    expect(cache.fill('i1', 'A', { auth: 10, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    expect(cache.fill('i2', 'B', { auth: 10, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    cache.apply(ev('auth', 10, eventTypes.identityUpdated.type, { id: 'i3' }));
    for (let p = 11; p <= 20; p++) cache.apply(attempts(p));
    expect(cache.get('i1', undefined)).toBe('A');
    expect(cache.get('i2', undefined)).toBe('B');
    // A fill read before the attempts is still taken (they changed nothing), and the next real change still counts.
    expect(cache.fill('i4', 'D', { auth: 12, 'pki-enrollment': 0 }, cache.ticket())).toBe(true);
    cache.apply(ev('auth', 21, eventTypes.identityUpdated.type, { id: 'i1' }));
    expect(cache.get('i1', undefined)).toBeUndefined();
    expect(cache.get('i2', undefined)).toBe('B');
  });
});

describe('which kept service reads an event concerns', () => {
  const of = (source: string, type: string, data: unknown = {}) => serviceAnswerConcerns(ev(source, 1, type, data));
  it("an identity's access, attributes and overrides concern it; services, configs and policies every identity", () => {
    expect(of('policy', policyEventTypes.identityAccessChanged.type, { identityId: 'i1' })).toBe('i1');
    expect(of('policy', policyEventTypes.identityAccessBulkChanged.type, { identityIds: ['i1'] })).toBe('all');
    expect(of('policy', policyEventTypes.servicePolicyUpdated.type, { id: 'p' })).toBe('all');
    expect(of('policy', policyEventTypes.postureCheckCreated.type, { id: 'c' })).toBe('all');
    expect(of('inventory', inventoryEventTypes.serviceUpdated.type, { id: 's' })).toBe('all');
    expect(of('inventory', inventoryEventTypes.configUpdated.type, { id: 'c' })).toBe('all');
    expect(of('inventory', inventoryEventTypes.configTypeDeleted.type, { id: 't' })).toBe('all');
    expect(of('inventory', inventoryEventTypes.identityServiceConfigsUpdated.type, { identityId: 'i2' })).toBe('i2');
    expect(of('auth', eventTypes.identityUpdated.type, { id: 'i3' })).toBe('i3');
  });

  it('routers, terminators, router policies and logins concern none; an unknown type every identity', () => {
    expect(of('policy', policyEventTypes.edgeRouterPolicyCreated.type)).toBeUndefined();
    expect(of('policy', policyEventTypes.serviceEdgeRouterPolicyDeleted.type)).toBeUndefined();
    expect(of('inventory', inventoryEventTypes.edgeRouterUpdated.type)).toBeUndefined();
    expect(of('inventory', inventoryEventTypes.terminatorCreated.type)).toBeUndefined();
    for (const d of Object.values(routerPresenceEventTypes)) expect(of('inventory', d.type)).toBeUndefined();
    expect(of('auth', eventTypes.apiSessionCreated.type, { identityId: 'i1' })).toBeUndefined();
    expect(of('auth', authenticationEventTypes.authenticationAttempted.type)).toBeUndefined();
    expect(of('policy', 'somethingNew.happened')).toBe('all');
    expect(of('inventory', 'somethingNew.happened')).toBe('all');
  });

  it('a service read is kept per URL and session config types; without them, not at all', () => {
    const caller = { identityId: 'i1', apiSessionId: 's', token: 't', isAdmin: false, authQueries: [] };
    expect(keptAnswerOf('client.listServices', { ...caller, configTypes: ['all'] }, '/x?limit=1')).toEqual({
      cache: 'services',
      key: 'user\n/x?limit=1\nall',
    });
    // An administrator's session keeps its own view apart from a non-administrator's of the same identity.
    expect(keptAnswerOf('client.listServices', { ...caller, isAdmin: true, configTypes: ['all'] }, '/x')?.key).toBe(
      'admin\n/x\nall',
    );
    expect(keptAnswerOf('client.listServices', caller, '/x')).toBeUndefined();
    expect(keptAnswerOf('management.listServices', { ...caller, configTypes: [] }, '/x')).toBeUndefined();
    expect(keptAnswerOf('client.getCurrentIdentity', caller, '/x')).toEqual({ cache: 'identity', key: '' });
  });
});
