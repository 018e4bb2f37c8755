import { ApiError, type SessionUseVerdict, eventTypes, inventoryEventTypes } from '@ziti/contracts';
import { type Database, createReader, createUnitOfWork, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityFixture, policyBed, policyTestDatabase, routerFixture, serviceFixture } from '../../test/support.ts';
import { PgApiSessions } from '../api-sessions/api-sessions.store.ts';
import { PostureEvaluation } from '../posture/posture-evaluation.domain.ts';
import { PgPostureData } from '../posture/posture-data.store.ts';
import type { PolicyInput } from '../policies/policies.domain.ts';
import { SessionUseAuthority } from './session-use.domain.ts';
import { SessionService } from './sessions.domain.ts';
import { PgSessions } from './sessions.store.ts';
import { sessionCalls } from './sessions.transport.ts';

/**
 * `fabric.authorizeSessionUse` on real Postgres: sessions created as a client creates them, then
 * presented through routers while policies, entities and API sessions change underneath — every
 * refusal of the reference's checks (ziti `handler_edge_ctrl/common.go`) and the allowed case.
 */
let database: Database;
let drop: () => Promise<void>;
let bed: ReturnType<typeof policyBed>;
let authority: SessionUseAuthority;
let calls: ReturnType<typeof sessionCalls>;
const tokens: Record<string, string> = {};
const sessionIds: Record<string, string> = {};
const policyIds: Record<string, string> = {};

const policyBodies: Record<string, { kind: 'service' | 'edgeRouter' | 'serviceEdgeRouter'; body: PolicyInput }> = {
  dial: {
    kind: 'service',
    body: { name: 'u-dial', type: 'Dial', semantic: 'AnyOf', identityRoles: ['#eng'], serviceRoles: ['#web'] },
  },
  bind: {
    kind: 'service',
    body: { name: 'u-bind', type: 'Bind', semantic: 'AnyOf', identityRoles: ['#eng'], serviceRoles: ['#web'] },
  },
  // The identities reach r-shared and r-erp-only; the services reach r-shared and r-serp-only.
  erp: {
    kind: 'edgeRouter',
    body: { name: 'u-erp', semantic: 'AnyOf', identityRoles: ['#eng'], edgeRouterRoles: ['#shared', '#erp-only'] },
  },
  serp: {
    kind: 'serviceEdgeRouter',
    body: { name: 'u-serp', semantic: 'AnyOf', serviceRoles: ['#web'], edgeRouterRoles: ['#shared', '#serp-only'] },
  },
};
const createPolicy = async (key: string) => {
  const { kind, body } = policyBodies[key]!;
  policyIds[key] = (await bed.engine.policies[kind].create(body)).id;
};
const deletePolicy = (key: string) => bed.engine.policies[policyBodies[key]!.kind].delete(policyIds[key]!);

const use = (session: string, type: 'Dial' | 'Bind', routerId = 'r-shared') =>
  authority.authorize({ token: tokens[session]!, type, routerId });
const outcome = async (session: string, type: 'Dial' | 'Bind', routerId?: string) =>
  (await use(session, type, routerId)).outcome;

beforeAll(async () => {
  ({ database, drop } = await policyTestDatabase('use', 6));
  bed = policyBed(database);
  await bed.deliver(eventTypes.identityCreated, 'auth', identityFixture('u-user', ['eng']));
  await bed.deliver(eventTypes.identityCreated, 'auth', { ...identityFixture('u-admin', ['eng']), isAdmin: true });
  for (const id of ['u-svc', 'u-svc-gone'])
    await bed.deliver(inventoryEventTypes.serviceCreated, 'inventory', serviceFixture(id, ['web']));
  for (const [id, attr] of [
    ['r-shared', 'shared'],
    ['r-erp-only', 'erp-only'],
    ['r-serp-only', 'serp-only'],
  ])
    await bed.deliver(inventoryEventTypes.edgeRouterCreated, 'inventory', routerFixture(id!, [attr!]));
  for (const key of Object.keys(policyBodies)) await createPolicy(key);

  const sessions = new SessionService(
    createUnitOfWork(database, undefined, 'policy', (tx) => new PgSessions(tx)),
    createReader(database, (db) => new PgSessions(db)),
    new PostureEvaluation(createReader(database, (db) => new PgPostureData(db))),
    { routePaths: async () => undefined },
    createReader(database, (db) => new PgPostureData(db)),
  );
  const made = async (name: string, identityId: string, serviceId: string, type: 'Dial' | 'Bind', isAdmin = false) => {
    const { view } = await sessions.create(
      { identityId, isAdmin, apiSessionId: `as-${identityId}` },
      { serviceId, type },
    );
    tokens[name] = view.session.token;
    sessionIds[name] = view.session.id;
  };
  await made('dial', 'u-user', 'u-svc', 'Dial');
  await made('bind', 'u-user', 'u-svc', 'Bind');
  await made('admin', 'u-admin', 'u-svc', 'Dial', true);
  await made('gone', 'u-user', 'u-svc-gone', 'Dial');
  authority = new SessionUseAuthority(createReader(database, (db) => new PgSessions(db)));
  calls = sessionCalls(authority);
});
afterAll(async () => drop?.());

describe('authorizeSessionUse', () => {
  it('allows a Dial session to dial and a Bind session to bind through a router both reach, naming the session', async () => {
    expect(await use('dial', 'Dial')).toEqual({
      outcome: 'allowed',
      session: {
        id: sessionIds.dial,
        apiSessionId: 'as-u-user',
        identityId: 'u-user',
        serviceId: 'u-svc',
        type: 'Dial',
      },
    });
    expect(await use('bind', 'Bind')).toMatchObject({ outcome: 'allowed', session: { type: 'Bind' } });
  });

  it('an unknown token is invalidSession; a session of the other type is wrongSessionType', async () => {
    expect(await authority.authorize({ token: 'no-such-token', type: 'Dial', routerId: 'r-shared' })).toEqual({
      outcome: 'invalidSession',
    });
    expect(await authority.authorize({ token: '', type: 'Bind', routerId: 'r-shared' })).toEqual({
      outcome: 'invalidSession',
    });
    expect(await outcome('dial', 'Bind')).toBe('wrongSessionType');
    expect(await outcome('bind', 'Dial')).toBe('wrongSessionType');
  });

  it('a router the identity or the service does not reach (or no router at all) is invalidEdgeRouter', async () => {
    expect(await outcome('dial', 'Dial', 'r-erp-only')).toBe('invalidEdgeRouter');
    expect(await outcome('dial', 'Dial', 'r-serp-only')).toBe('invalidEdgeRouter');
    expect(await outcome('dial', 'Dial', 'r-unknown')).toBe('invalidEdgeRouter');
  });

  it('the service policy removed after the session was created: invalidService (administrators are spared), and back when restored', async () => {
    await deletePolicy('dial');
    expect(await outcome('dial', 'Dial')).toBe('invalidService');
    // The Bind session keeps its own policy; the administrator's session stays usable, as the
    // reference's enforcer spares administrators.
    expect(await outcome('bind', 'Bind')).toBe('allowed');
    expect(await outcome('admin', 'Dial')).toBe('allowed');
    await createPolicy('dial');
    expect(await outcome('dial', 'Dial')).toBe('allowed');
  });

  it("the identity's edge-router policy removed, or the service's service-edge-router policy: invalidEdgeRouter", async () => {
    await deletePolicy('erp');
    expect(await outcome('dial', 'Dial')).toBe('invalidEdgeRouter');
    expect(await outcome('admin', 'Dial')).toBe('invalidEdgeRouter');
    await createPolicy('erp');
    expect(await outcome('dial', 'Dial')).toBe('allowed');
    await deletePolicy('serp');
    expect(await outcome('dial', 'Dial')).toBe('invalidEdgeRouter');
    expect(await outcome('bind', 'Bind')).toBe('invalidEdgeRouter');
    await createPolicy('serp');
    expect(await outcome('bind', 'Bind')).toBe('allowed');
  });

  it('the service deleted: invalidService, not the router its links no longer reach', async () => {
    expect(await outcome('gone', 'Dial')).toBe('allowed');
    await bed.deliver(inventoryEventTypes.serviceDeleted, 'inventory', serviceFixture('u-svc-gone', ['web']));
    expect(await outcome('gone', 'Dial')).toBe('invalidService');
  });

  it('an API session ending (even before its sessions are removed) or the identity deleted: invalidSession', async () => {
    // The end applied by another replica is seen at once, while its sessions are still being removed.
    await queryRows(database.db, `update api_sessions set ended_at = now() where id = 'as-u-admin'`);
    expect(await outcome('admin', 'Dial')).toBe('invalidSession');
    await database.transaction((tx) => new PgApiSessions(tx).ended('as-u-admin', 'u-admin', new Date().toISOString()));
    expect(await outcome('admin', 'Dial')).toBe('invalidSession');
    expect(await outcome('dial', 'Dial')).toBe('allowed');
    await bed.deliver(eventTypes.identityDeleted, 'auth', identityFixture('u-user', ['eng']));
    expect(await outcome('dial', 'Dial')).toBe('invalidSession');
    expect(await outcome('bind', 'Bind')).toBe('invalidSession');
  });

  it('is served as the call its contract declares; a malformed request is COULD_NOT_VALIDATE', async () => {
    const handle = calls['fabric.authorizeSessionUse']!;
    const verdict = (await handle({ token: 'nope', type: 'Dial', routerId: 'r-shared' })) as SessionUseVerdict;
    expect(verdict).toEqual({ outcome: 'invalidSession' });
    const err = await handle({ token: 'nope', type: 'Both', routerId: 'r-shared' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('COULD_NOT_VALIDATE');
  });
});
