import { publishedEvents } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import {
  asEventState,
  entityEventKinds,
  entityOwners,
  httpMethodOf,
  rebuildableStates,
} from './entity-kinds.domain.ts';

const kinds = entityOwners.flatMap((source) => entityEventKinds(source));
const byType = new Map(kinds.map((k) => [k.def.type, k]));

describe('entity event kinds', () => {
  it('name each entity by its management collection and each verb by its change', () => {
    expect(byType.get('identity.created')).toMatchObject({
      source: 'auth',
      entityType: 'identities',
      action: 'created',
    });
    expect(byType.get('servicePolicy.updated')).toMatchObject({ source: 'policy', entityType: 'servicePolicies' });
    expect(byType.get('serviceEdgeRouterPolicy.deleted')).toMatchObject({
      entityType: 'serviceEdgeRouterPolicies',
      action: 'deleted',
    });
    expect(byType.get('ca.updated')).toMatchObject({ source: 'pki-enrollment', entityType: 'cas' });
    expect(byType.get('mfa.verified')).toMatchObject({ entityType: 'mfa', action: 'updated' });
    expect(byType.get('edgeRouter.created')).toMatchObject({ source: 'inventory', entityType: 'edgeRouters' });
    for (const action of ['created', 'updated', 'deleted'])
      expect(byType.get(`terminator.${action}`)).toMatchObject({
        source: 'inventory',
        entityType: 'terminators',
        action,
      });
  });

  it('leave out derived events and logins', () => {
    for (const type of [
      'identityAccess.changed',
      'identityAccess.bulkChanged',
      'apiSession.created',
      'apiSession.deleted',
      // A router's connection is no entity change made through an API.
      'routerPresence.changed',
    ])
      expect(byType.has(type), type).toBe(false);
  });

  it('cover every create, update and delete the owners publish', () => {
    const published = entityOwners.flatMap((source) =>
      Object.values(publishedEvents[source])
        .map((d) => d.type)
        .filter((t) => /\.(created|updated|deleted)$/.test(t) && !t.startsWith('apiSession.')),
    );
    expect(published.filter((t) => !byType.has(t))).toEqual([]);
  });

  it('rebuild only states the owners page, under the names the events use', () => {
    const names = new Set(kinds.map((k) => `${k.source}:${k.entityType}`));
    for (const source of entityOwners)
      for (const s of rebuildableStates[source])
        expect(names.has(`${source}:${s.entityType}`), s.entityType).toBe(true);
  });
});

describe('httpMethodOf', () => {
  it('reads the operation table', () => {
    expect(httpMethodOf('management.updateIdentity')).toBe('PUT');
    expect(httpMethodOf('management.patchIdentity')).toBe('PATCH');
    expect(httpMethodOf('management.createServicePolicy')).toBe('POST');
    expect(httpMethodOf('management.deleteIdentity')).toBe('DELETE');
    expect(httpMethodOf('client.authenticate')).toBe('POST');
    expect(httpMethodOf('management.noSuchThing')).toBeUndefined();
  });
});

describe('asEventState', () => {
  it('shapes a state page entry as the events carry it, and keeps what the schema refuses', () => {
    const page = {
      id: 'i1',
      name: 'n',
      typeId: 'User',
      isAdmin: false,
      isDefaultAdmin: false,
      roleAttributes: [],
      externalId: null,
      authPolicyId: 'default',
      disabled: false,
      tags: {},
      createdAt: 'c',
      updatedAt: 'u',
      extra: 'not in the contract',
    };
    const shaped = asEventState('auth', 'identities', page);
    expect(shaped).toMatchObject({ disabledAt: null, disabledUntil: null });
    expect('extra' in shaped).toBe(false);
    expect(asEventState('auth', 'identities', { id: 'x' })).toEqual({ id: 'x' });
  });
});
