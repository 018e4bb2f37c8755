import {
  type ConfigState,
  type ConfigTypeState,
  type EdgeRouterState,
  type IdentityServiceConfigsState,
  type IdentityState,
  type ServiceState,
} from '@ziti/contracts';
import { type Database, type Db, type EventSink, migrate, openDatabase, pgErrorOf } from '@ziti/platform';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, waitFor } from '../../../test/support/infra.ts';
import { migrations } from '../src/app.ts';
import { AccessDerivation } from '../src/access/access.domain.ts';
import type { AccessLinks, PolicyKind } from '../src/access/access.ports.ts';
import type { AdviceStore } from '../src/policy-advice/policy-advice.ports.ts';
import type { ClientEdgeRouterStore } from '../src/client-edge-routers/client-edge-routers.ports.ts';
import type { Policy } from '../src/policies/policies.domain.ts';
import type { PolicyStore } from '../src/policies/policies.ports.ts';
import type { SystemEdgeRouterPolicyStore } from '../src/policies/system-edge-router-policies.ports.ts';
import type { ListInput } from '@ziti/platform/list-page';
import type {
  EdgeRouterReadModel,
  EntityReadModel,
  IdentityReadModel,
  RouterPresenceReadModel,
  ServiceReadModel,
} from '../src/read-models/read-models.ports.ts';
import type { PostureCheck } from '../src/posture/posture-checks.domain.ts';
import type { PostureCheckStore, PostureCheckTypeStore } from '../src/posture/posture-checks.ports.ts';
import type { PostureDataStore } from '../src/posture/posture-data.ports.ts';
import type { PostureEvaluationStore } from '../src/posture/posture-evaluation.ports.ts';
import type { RelationStore } from '../src/relations/relations.ports.ts';
import type { RoleTargets } from '../src/policies/roles.ports.ts';
import type { ServiceViewStore } from '../src/services/service-view.ports.ts';
import type { ApiSessionRecords } from '../src/api-sessions/api-sessions.ports.ts';
import { type Session, decideCreation } from '../src/sessions/sessions.domain.ts';
import type { SessionStore } from '../src/sessions/sessions.ports.ts';
import { PgAccessLinks } from '../src/access/access-links.store.ts';
import { PgClientEdgeRouters } from '../src/client-edge-routers/client-edge-routers.store.ts';
import { PgAdvice } from '../src/policy-advice/policy-advice.store.ts';
import {
  PgConfigReadModel,
  PgConfigTypeReadModel,
  PgEdgeRouterReadModel,
  PgIdentityReadModel,
  PgIdentityServiceConfigsReadModel,
  PgRouterPresenceReadModel,
  PgServiceReadModel,
} from '../src/read-models/read-models.store.ts';
import { pgEdgeRouterPolicies } from '../src/policies/edge-router-policies.store.ts';
import { PgSystemEdgeRouterPolicies } from '../src/policies/system-edge-router-policies.store.ts';
import { pgServiceEdgeRouterPolicies } from '../src/policies/service-edge-router-policies.store.ts';
import { pgServicePolicies } from '../src/policies/service-policies.store.ts';
import { PgRoleTargets } from '../src/policies/roles.store.ts';
import { PgPostureCheckStore, PgPostureCheckTypeStore } from '../src/posture/posture-checks.store.ts';
import { PgPostureData, forgetApiSessionPosture } from '../src/posture/posture-data.store.ts';
import { PgRelations } from '../src/relations/relations.store.ts';
import { PgServiceView } from '../src/services/service-view.store.ts';
import { PgApiSessions } from '../src/api-sessions/api-sessions.store.ts';
import { PgSessions } from '../src/sessions/sessions.store.ts';
import {
  fixedAt,
  identityFixture,
  offlinePresenceFixture,
  presenceFixture,
  routerFixture,
  serviceFixture,
} from './support.ts';
import {
  apiError,
  at,
  bytewise,
  emptier,
  lockedReadModifyWrites,
  rejection,
  storeTargets,
} from '../../../test/support/store-contract.ts';

/**
 * policy's stores as one contract run on the real Postgres and on PGlite (what `npm start` uses):
 * the same SQL must behave the same on both. Each store is driven through its port (the policy,
 * posture check, read model, session, service view, relation, advice, edge router, posture data,
 * role target and access link ports), as the domain drives it; the derived tables are filled the
 * way the consumers and operations fill them (`AccessDerivation`). Each target is one database of
 * this file (an in-memory PGlite takes seconds to open), emptied after every case: every case
 * starts from a freshly migrated database.
 */

/** Every store of policy, each as its port. */
interface Stores {
  servicePolicies: PolicyStore;
  edgeRouterPolicies: PolicyStore;
  serviceEdgeRouterPolicies: PolicyStore;
  systemEdgeRouterPolicies: SystemEdgeRouterPolicyStore;
  checks: PostureCheckStore;
  checkTypes: PostureCheckTypeStore;
  identities: IdentityReadModel;
  services: ServiceReadModel;
  edgeRouters: EdgeRouterReadModel;
  routerPresence: RouterPresenceReadModel;
  configs: EntityReadModel<ConfigState>;
  configTypes: EntityReadModel<ConfigTypeState>;
  overrides: EntityReadModel<IdentityServiceConfigsState>;
  targets: RoleTargets;
  links: AccessLinks;
  postureData: PostureDataStore & PostureEvaluationStore;
  sessions: SessionStore;
  apiSessions: ApiSessionRecords;
  view: ServiceViewStore;
  relations: RelationStore;
  advice: AdviceStore;
  clientRouters: ClientEdgeRouterStore;
}

/** The stores bound to `db` (a transaction, or the pool) as app.ts binds them. */
function bind(db: Db): Stores {
  const apiSessions = new PgApiSessions(db);
  return {
    servicePolicies: pgServicePolicies(db),
    edgeRouterPolicies: pgEdgeRouterPolicies(db),
    serviceEdgeRouterPolicies: pgServiceEdgeRouterPolicies(db),
    systemEdgeRouterPolicies: new PgSystemEdgeRouterPolicies(db),
    checks: new PgPostureCheckStore(db),
    checkTypes: new PgPostureCheckTypeStore(db),
    identities: new PgIdentityReadModel(db),
    services: new PgServiceReadModel(db),
    edgeRouters: new PgEdgeRouterReadModel(db),
    routerPresence: new PgRouterPresenceReadModel(db),
    configs: new PgConfigReadModel(db),
    configTypes: new PgConfigTypeReadModel(db),
    overrides: new PgIdentityServiceConfigsReadModel(db),
    targets: new PgRoleTargets(db),
    links: new PgAccessLinks(db),
    postureData: new PgPostureData(db),
    sessions: new PgSessions(db),
    apiSessions: {
      started: (x) => apiSessions.started(x),
      mfaPassed: (id, identityId, at) => apiSessions.mfaPassed(id, identityId, at),
      ended: (id, identityId, at) => apiSessions.ended(id, identityId, at),
      forgetPosture: (id) => forgetApiSessionPosture(db, id),
    },
    view: new PgServiceView(db),
    relations: new PgRelations(db),
    advice: new PgAdvice(db),
    clientRouters: new PgClientEdgeRouters(db),
  };
}

type Work = <T>(fn: (s: Stores) => Promise<T>) => Promise<T>;

/** A migrated policy database of `kind`: `work` runs in a transaction, `read` on the pool. */
async function policyDatabase(kind: (typeof storeTargets)[number]) {
  let database: Database;
  let drop = async () => undefined as void;
  if (kind === 'postgres') {
    const db = await createTestDatabase('pols');
    database = await openDatabase({ url: db.url, poolSize: 4 });
    drop = db.drop;
  } else {
    database = await openDatabase({ pgliteMemory: true });
  }
  await migrate(database, migrations);
  const work: Work = (fn) => database.transaction((tx) => fn(bind(tx)));
  const pool = bind(database.db);
  const read: Work = (fn) => fn(pool);
  return {
    database,
    work,
    read,
    drop: async () => {
      await database.close();
      await drop();
    },
  };
}

const policy = (id: string, o: Partial<Policy> = {}): Policy => ({
  id,
  name: id,
  semantic: 'AnyOf',
  type: 'Dial',
  isSystem: false,
  roles: {},
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const mfaCheck = (id: string, o: Partial<PostureCheck> = {}): PostureCheck => ({
  id,
  name: `check-${id}`,
  version: 1,
  roleAttributes: [],
  tags: {},
  spec: { typeId: 'MFA', timeoutSeconds: -1, promptOnWake: false, promptOnUnlock: false, ignoreLegacyEndpoints: false },
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const verifiedRouter = (id: string, roleAttributes: string[], isVerified = true): EdgeRouterState => ({
  ...routerFixture(id, roleAttributes),
  isVerified,
});

/** What the derivations announce: kept, not published. */
const announced: { type: string; data: unknown }[] = [];
const events: EventSink = {
  emit: async (def, data) => {
    announced.push({ type: def.type, data });
  },
};
const access = new AccessDerivation();
/** Owner event positions, rising through the file. */
let position = 0;

/** What the consumers do with an owner's event: apply the state, derive again when it changed. */
async function putIdentity(s: Stores, state: IdentityState, deleted = false) {
  if (await s.identities.apply(state, ++position, deleted)) await access.identityChanged(s.links, events, state.id);
}
async function putService(s: Stores, state: ServiceState, deleted = false) {
  if (await s.services.apply(state, ++position, deleted)) await access.serviceChanged(s.links, events, state.id);
}
async function putRouter(s: Stores, state: EdgeRouterState, deleted = false) {
  if (await s.edgeRouters.apply(state, ++position, deleted)) await access.edgeRouterChanged(s.links, state.id);
}
/** What the policy operations do: write the policy, derive again for it. */
async function putPolicy(s: Stores, kind: PolicyKind, p: Policy) {
  const store = {
    service: s.servicePolicies,
    edgeRouter: s.edgeRouterPolicies,
    serviceEdgeRouter: s.serviceEdgeRouterPolicies,
  }[kind];
  if (await store.get(p.id, { forUpdate: true })) await store.update(p);
  else await store.insert(p);
  await access.policyChanged(s.links, events, kind, p.id);
}
/** What the posture check operations do: write the check, relink it. */
async function putCheck(s: Stores, c: PostureCheck) {
  await s.checks.insert(c);
  await access.postureCheckChanged(s.links, c.id);
}

const duplicate = (store: string, value: string) => ({
  code: 'COULD_NOT_VALIDATE',
  cause: { field: 'name', reason: `duplicate value '${value}' in unique index on ${store} store`, value },
});

/** Ids and total of a page. */
const idsOf = async <T extends { id: string }>(p: Promise<{ items: T[]; totalCount: number }>) => {
  const page = await p;
  return { ids: page.items.map((x) => x.id), total: page.totalCount };
};

describe.each(storeTargets)('policy stores on %s', (target) => {
  let b: Awaited<ReturnType<typeof policyDatabase>> | undefined;
  let empty: () => Promise<void>;
  beforeAll(async () => {
    b = await policyDatabase(target);
    empty = await emptier(b.database);
  });
  afterEach(async () => {
    announced.length = 0;
    await empty?.();
  });
  afterAll(async () => b?.drop());

  it('policies of each kind: insert, get (also locked), update, delete, unique name within a kind, the fields of each kind', async () => {
    const { work, read } = b!;
    const sp = policy('sp', {
      semantic: 'AllOf',
      type: 'Bind',
      roles: { identityRoles: ['#eng', '#ops'], serviceRoles: ['@s1'], postureCheckRoles: ['#mfa'] },
      tags: { k: { n: [1, 'x'] } },
    });
    await work(async (s) => {
      await s.servicePolicies.insert(sp);
      await s.edgeRouterPolicies.insert(
        policy('ep', { type: null, isSystem: true, roles: { identityRoles: ['#all'], edgeRouterRoles: ['#edge'] } }),
      );
      // The fields a kind has not are not kept: a type on a service-edge-router policy, isSystem off edge-router ones.
      await s.serviceEdgeRouterPolicies.insert(
        policy('sep', { isSystem: true, roles: { serviceRoles: ['#web'], identityRoles: ['#ignored'] } }),
      );
      // The same name in another kind is no conflict.
      await s.edgeRouterPolicies.insert(policy('sp-name', { name: 'sp', type: null }));
    });
    expect(await read((s) => s.servicePolicies.get('sp'))).toEqual(sp);
    expect(await work((s) => s.servicePolicies.get('sp', { forUpdate: true }))).toEqual(sp);
    expect(await work((s) => s.servicePolicies.get('ep', { forUpdate: true }))).toBeNull();
    expect(await read((s) => s.edgeRouterPolicies.get('ep'))).toEqual(
      policy('ep', { type: null, isSystem: true, roles: { identityRoles: ['#all'], edgeRouterRoles: ['#edge'] } }),
    );
    expect(await read((s) => s.serviceEdgeRouterPolicies.get('sep'))).toEqual(
      policy('sep', { type: null, roles: { serviceRoles: ['#web'], edgeRouterRoles: [] } }),
    );

    // An update writes every field but isSystem and createdAt.
    const changed: Policy = {
      ...sp,
      name: 'sp-renamed',
      semantic: 'AnyOf',
      type: 'Dial',
      roles: { identityRoles: [], serviceRoles: ['#all'], postureCheckRoles: [] },
      tags: {},
      createdAt: at(50),
      updatedAt: at(7),
    };
    await work((s) => s.servicePolicies.update(changed));
    expect(await read((s) => s.servicePolicies.get('sp'))).toEqual({ ...changed, createdAt: at() });
    await work((s) => s.edgeRouterPolicies.update(policy('ep', { type: null, isSystem: false, updatedAt: at(1) })));
    expect(await read((s) => s.edgeRouterPolicies.get('ep'))).toMatchObject({
      isSystem: true,
      roles: { identityRoles: [], edgeRouterRoles: [] },
      updatedAt: at(1),
    });

    expect(await apiError(work((s) => s.servicePolicies.insert(policy('sp2', { name: 'sp-renamed' }))))).toEqual(
      duplicate('servicePolicies', 'sp-renamed'),
    );
    expect(await apiError(work((s) => s.edgeRouterPolicies.update(policy('ep', { name: 'sp', type: null }))))).toEqual(
      duplicate('edgeRouterPolicies', 'sp'),
    );
    expect(
      await apiError(work((s) => s.serviceEdgeRouterPolicies.insert(policy('sep2', { name: 'sep', type: null })))),
    ).toEqual(duplicate('serviceEdgeRouterPolicies', 'sep'));
    expect(await read((s) => s.servicePolicies.get('sp2'))).toBeNull();
    // The table refuses what the domain never writes.
    expect(pgErrorOf(await rejection(work((s) => s.servicePolicies.insert(policy('sp3', { type: null })))))?.code).toBe(
      '23502',
    );

    expect(await work((s) => s.servicePolicies.delete('sp'))).toBe(true);
    expect(await work((s) => s.servicePolicies.delete('sp'))).toBe(false);
    expect(await work((s) => s.edgeRouterPolicies.delete('sep'))).toBe(false);
    expect(await read((s) => s.servicePolicies.get('sp'))).toBeNull();
  });

  it('policies drop the @ids of gone entities from a role field (those given, or all), in order, updatedAt kept, system ones kept', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', []));
      await putIdentity(s, identityFixture('i2', []));
      await putIdentity(s, identityFixture('i3', []));
      await putRouter(s, routerFixture('r1', []));
      await putPolicy(
        s,
        'service',
        policy('sp1', { roles: { identityRoles: ['#eng', '@i1', '@i2', '@i3'], serviceRoles: ['@i1'] } }),
      );
      await putPolicy(s, 'service', policy('sp2', { roles: { identityRoles: ['@i2'] } }));
      await putPolicy(
        s,
        'edgeRouter',
        policy('ep', { type: null, roles: { identityRoles: ['@i1'], edgeRouterRoles: ['@r1'] } }),
      );
      await putPolicy(
        s,
        'edgeRouter',
        policy('ep-sys', { type: null, isSystem: true, roles: { identityRoles: ['@i1'], edgeRouterRoles: ['@r1'] } }),
      );
      await putIdentity(s, identityFixture('i1', []), true);
      await putIdentity(s, identityFixture('i3', []), true);
    });
    // Only the ids given: i1 (gone) leaves, i3 (gone too) stays; a live id given stays.
    const one = await work((s) => s.servicePolicies.dropGoneRoles('identityRoles', ['i1', 'i2']));
    expect(one.map((p) => [p.id, p.roles.identityRoles, p.updatedAt])).toEqual([['sp1', ['#eng', '@i2', '@i3'], at()]]);
    // Another field of the same policy is not touched (serviceRoles name no identity).
    expect((await read((s) => s.servicePolicies.get('sp1')))!.roles.serviceRoles).toEqual(['@i1']);
    // Every gone id (a rebuild): i3 now; a row that is not there at all counts as gone.
    await work((s) => s.servicePolicies.update(policy('sp2', { roles: { identityRoles: ['@i2', '@never'] } })));
    const all = await work((s) => s.servicePolicies.dropGoneRoles('identityRoles'));
    expect(all.map((p) => [p.id, p.roles.identityRoles])).toEqual([
      ['sp1', ['#eng', '@i2']],
      ['sp2', ['@i2']],
    ]);
    expect(await work((s) => s.servicePolicies.dropGoneRoles('identityRoles'))).toEqual([]);
    // A kind without the field changes nothing; system edge-router policies keep theirs.
    expect(await work((s) => s.serviceEdgeRouterPolicies.dropGoneRoles('identityRoles'))).toEqual([]);
    const ep = await work((s) => s.edgeRouterPolicies.dropGoneRoles('identityRoles', ['i1']));
    expect(ep.map((p) => [p.id, p.roles])).toEqual([['ep', { identityRoles: [], edgeRouterRoles: ['@r1'] }]]);
    expect((await read((s) => s.edgeRouterPolicies.get('ep-sys')))!.roles.identityRoles).toEqual(['@i1']);
  });

  it('system edge-router policies: the tunneler-enabled live routers, the system policy ids, a policy by name', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putRouter(s, {
        ...routerFixture('r1', []),
        isTunnelerEnabled: true,
        updatedAt: '2026-03-01T00:00:00.000Z',
      });
      await putRouter(s, routerFixture('r2', []));
      await putRouter(s, { ...routerFixture('r3', []), isTunnelerEnabled: true });
      await putRouter(s, { ...routerFixture('r3', []), isTunnelerEnabled: true }, true);
      await putPolicy(s, 'edgeRouter', policy('r1', { type: null, name: 'edge-router-r1-system', isSystem: true }));
      await putPolicy(s, 'edgeRouter', policy('r2', { type: null, isSystem: true }));
      await putPolicy(s, 'edgeRouter', policy('p1', { type: null, name: 'plain' }));
    });
    expect(await read((s) => s.systemEdgeRouterPolicies.tunnelerRouters())).toEqual([
      { id: 'r1', updatedAt: new Date('2026-03-01T00:00:00.000Z') },
    ]);
    expect(await read((s) => s.systemEdgeRouterPolicies.tunnelerRouters(['r2', 'r3']))).toEqual([]);
    expect(await read((s) => s.systemEdgeRouterPolicies.systemPolicyIds())).toEqual(['r1', 'r2']);
    expect(await read((s) => s.systemEdgeRouterPolicies.systemPolicyIds(['r2', 'p1']))).toEqual(['r2']);
    expect(await read((s) => s.systemEdgeRouterPolicies.policyNamed('plain'))).toBe('p1');
    expect(await read((s) => s.systemEdgeRouterPolicies.policyNamed('none'))).toBeUndefined();
  });

  it('policies list with ZitiQL filters (type as a number, roles, linked entities and their names), bytewise sort and pages', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng', 'ops']));
      await putIdentity(s, identityFixture('i2', ['eng']));
      await putService(s, serviceFixture('s1', ['web']));
      await putService(s, serviceFixture('s2', ['db']));
      await putRouter(s, routerFixture('r1', ['edge']));
      await putPolicy(
        s,
        'service',
        policy('sp-a', { semantic: 'AllOf', roles: { identityRoles: ['#eng', '#ops'], serviceRoles: ['#web'] } }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp-b', { type: 'Bind', roles: { identityRoles: ['@i2'], serviceRoles: ['@s1', '@s2'] } }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp-C', { roles: { identityRoles: ['#nobody'], serviceRoles: ['#web'] }, createdAt: at(1) }),
      );
      await putPolicy(
        s,
        'edgeRouter',
        policy('ep', { type: null, isSystem: true, roles: { identityRoles: ['#all'], edgeRouterRoles: ['#edge'] } }),
      );
      await putPolicy(
        s,
        'serviceEdgeRouter',
        policy('sep', { type: null, roles: { serviceRoles: ['@s2'], edgeRouterRoles: ['@r1'] } }),
      );
    });
    const sps = (input: ListInput) => idsOf(read((s) => s.servicePolicies.list(input)));
    expect(await sps({ sort: 'name' })).toEqual({ ids: ['sp-C', 'sp-a', 'sp-b'], total: 3 });
    expect(await sps({ filter: 'type = 1 sort by name desc' })).toEqual({ ids: ['sp-a', 'sp-C'], total: 2 });
    expect(await sps({ filter: 'type = 2' })).toEqual({ ids: ['sp-b'], total: 1 });
    expect(await sps({ filter: 'semantic = "AllOf"' })).toEqual({ ids: ['sp-a'], total: 1 });
    expect(await sps({ filter: 'anyOf(identityRoles) = "#eng"' })).toEqual({ ids: ['sp-a'], total: 1 });
    expect(await sps({ filter: 'anyOf(identities) = "i2"' })).toEqual({ ids: ['sp-b'], total: 1 });
    expect(await sps({ filter: 'anyOf(identities.name) = "n-i1"' })).toEqual({ ids: ['sp-a'], total: 1 });
    expect(await sps({ filter: 'anyOf(services) = "s1" sort by id', limit: 2 })).toEqual({
      ids: ['sp-C', 'sp-a'],
      total: 3,
    });
    expect(await sps({ filter: 'anyOf(services) = "s1" sort by id', limit: 2, offset: 2 })).toEqual({
      ids: ['sp-b'],
      total: 3,
    });
    expect(await sps({ filter: 'createdAt > datetime(2026-01-01T00:00:00Z)' })).toEqual({ ids: ['sp-C'], total: 1 });
    expect(
      await idsOf(read((s) => s.edgeRouterPolicies.list({ filter: 'isSystem = true and anyOf(edgeRouters) = "r1"' }))),
    ).toEqual({ ids: ['ep'], total: 1 });
    expect(
      await idsOf(read((s) => s.serviceEdgeRouterPolicies.list({ filter: 'anyOf(services.name) = "n-s2"' }))),
    ).toEqual({ ids: ['sep'], total: 1 });
    expect((await read((s) => s.servicePolicies.list({}))).filterableFields).toEqual(
      expect.arrayContaining(['type', 'identityRoles', 'identities', 'identities.name', 'services.name']),
    );
    expect((await apiError(read((s) => s.edgeRouterPolicies.list({ filter: 'type = 1' })))).code).toBe(
      'INVALID_FILTER',
    );
    // A tombstoned identity's name no longer matches; its links are gone.
    await work((s) => putIdentity(s, identityFixture('i1', ['eng', 'ops']), true));
    expect(await sps({ filter: 'anyOf(identities.name) = "n-i1" or anyOf(identities) = "i1"' })).toEqual({
      ids: [],
      total: 0,
    });
  });

  it('posture checks: every type round trips, update, unique name, lists with role filters and filters, role attributes, removal from policies; the fixed types', async () => {
    const { work, read } = b!;
    const checks: PostureCheck[] = [
      mfaCheck('mfa', {
        roleAttributes: ['mfa', 'all'],
        spec: {
          typeId: 'MFA',
          timeoutSeconds: 600,
          promptOnWake: true,
          promptOnUnlock: false,
          ignoreLegacyEndpoints: true,
        },
        tags: { t: 1 },
      }),
      mfaCheck('os', {
        roleAttributes: ['all'],
        spec: { typeId: 'OS', operatingSystems: [{ type: 'Windows', versions: ['>=10.0.0'] }] },
      }),
      mfaCheck('mac', { spec: { typeId: 'MAC', macAddresses: ['aabbccddeeff'] } }),
      mfaCheck('Domain', { roleAttributes: ['corp'], spec: { typeId: 'DOMAIN', domains: ['corp.example'] } }),
      mfaCheck('proc', {
        spec: {
          typeId: 'PROCESS',
          process: { osType: 'Linux', path: '/bin/agent', hashes: ['ab'], signerFingerprint: 'cd' },
        },
      }),
      mfaCheck('multi', {
        roleAttributes: ['corp', 'all'],
        spec: {
          typeId: 'PROCESS_MULTI',
          semantic: 'AllOf',
          processes: [{ osType: 'Windows', path: 'C:\\agent.exe', hashes: [], signerFingerprints: ['ef'] }],
        },
      }),
    ];
    await work(async (s) => {
      for (const c of checks) await s.checks.insert(c);
    });
    for (const c of checks) expect(await read((s) => s.checks.get(c.id))).toEqual(c);
    expect(await work((s) => s.checks.get('mfa', { forUpdate: true }))).toEqual(checks[0]);
    expect(await read((s) => s.checks.get('nope'))).toBeNull();

    const updated: PostureCheck = {
      ...checks[1]!,
      name: 'os-renamed',
      version: 2,
      roleAttributes: ['new'],
      spec: { typeId: 'OS', operatingSystems: [] },
      tags: { x: true },
      createdAt: at(99),
      updatedAt: at(3),
    };
    await work((s) => s.checks.update(updated));
    expect(await read((s) => s.checks.get('os'))).toEqual({ ...updated, createdAt: at() });
    expect(await apiError(work((s) => s.checks.insert(mfaCheck('x', { name: 'os-renamed' }))))).toEqual(
      duplicate('postureChecks', 'os-renamed'),
    );
    expect(await apiError(work((s) => s.checks.update({ ...updated, name: 'check-mac' })))).toEqual(
      duplicate('postureChecks', 'check-mac'),
    );

    const list = (input: ListInput, roles?: string[], semantic: 'AllOf' | 'AnyOf' = 'AnyOf') =>
      idsOf(read((s) => s.checks.list(input, roles ? { roles, semantic } : undefined)));
    expect(await list({ sort: 'name' })).toEqual({ ids: ['Domain', 'mac', 'mfa', 'multi', 'proc', 'os'], total: 6 });
    expect(await list({ sort: 'id', limit: 2, offset: 1 })).toEqual({ ids: ['mac', 'mfa'], total: 6 });
    expect(await list({ sort: 'id' }, ['#corp', '#new'])).toEqual({ ids: ['Domain', 'multi', 'os'], total: 3 });
    expect(await list({ sort: 'id' }, ['#corp', '#all'], 'AllOf')).toEqual({ ids: ['multi'], total: 1 });
    expect(await list({ sort: 'id' }, ['#mfa', '@proc'])).toEqual({ ids: ['mfa', 'proc'], total: 2 });
    expect(await list({ filter: 'promptOnWake = true' })).toEqual({ ids: ['mfa'], total: 1 });
    expect(await list({ filter: 'promptOnUnlock = false and anyOf(roleAttributes) = "all" sort by id' })).toEqual({
      ids: ['mfa', 'multi'],
      total: 2,
    });

    // Role attributes: distinct, bytewise; only limit and skip inside the filter page them.
    const attributes = (filter?: string) =>
      read((s) => s.checks.roleAttributes(filter === undefined ? {} : { filter })).then((p) => ({
        items: p.items,
        total: p.totalCount,
      }));
    expect(await attributes()).toEqual({ items: ['all', 'corp', 'mfa', 'new'], total: 4 });
    expect(await attributes('id contains "m"')).toEqual({ items: ['mfa'], total: 1 });
    expect(await attributes('true sort by id desc skip 1 limit 2')).toEqual({ items: ['mfa', 'corp'], total: 4 });

    // Service policies name checks by role; the checks they select are linked (and listed by them).
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng']));
      await putService(s, serviceFixture('s1', ['web']));
      await putPolicy(
        s,
        'service',
        policy('sp1', {
          roles: { identityRoles: ['#eng'], serviceRoles: ['#web'], postureCheckRoles: ['#mfa', '@proc'] },
        }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp2', {
          type: 'Bind',
          roles: { identityRoles: ['#eng'], serviceRoles: ['#web'], postureCheckRoles: ['@proc'] },
        }),
      );
      await putPolicy(s, 'service', policy('sp3', { roles: { postureCheckRoles: ['@mac'] } }));
    });
    expect(await list({ filter: 'anyOf(servicePolicies) = "sp2"' })).toEqual({ ids: ['proc'], total: 1 });
    expect(await list({ filter: 'anyOf(dialServices) = "s1" sort by id' })).toEqual({ ids: ['mfa', 'proc'], total: 2 });
    expect(await list({ filter: 'anyOf(bindServices) = "s1"' })).toEqual({ ids: ['proc'], total: 1 });
    // A deleted check leaves the policies' postureCheckRoles (updatedAt kept).
    expect(await work((s) => s.checks.delete('proc'))).toBe(true);
    const dropped = await work((s) => s.servicePolicies.dropGoneRoles('postureCheckRoles', ['proc']));
    expect(dropped.map((p) => [p.id, p.roles.postureCheckRoles])).toEqual([
      ['sp1', ['#mfa']],
      ['sp2', []],
    ]);
    expect(await work((s) => s.servicePolicies.dropGoneRoles('postureCheckRoles', ['proc']))).toEqual([]);
    expect(await read((s) => s.servicePolicies.get('sp1'))).toMatchObject({
      roles: { postureCheckRoles: ['#mfa'] },
      updatedAt: at(),
    });

    expect(await work((s) => s.checks.delete('mac'))).toBe(true);
    expect(await work((s) => s.checks.delete('mac'))).toBe(false);

    // The fixed types of the migration.
    expect(await read((s) => s.checkTypes.get('PROCESS'))).toMatchObject({
      id: 'PROCESS',
      name: 'Process Check',
      operatingSystems: [
        { type: 'Linux', versions: ['4.14', '4.19', '5.4', '5.9'] },
        { type: 'Windows', versions: ['Vista', '7', '8', '10', '2000'] },
        { type: 'macOS', versions: ['10.15', '11.0'] },
      ],
      tags: {},
    });
    expect(await read((s) => s.checkTypes.get('process'))).toBeNull();
    expect(
      await idsOf(read((s) => s.checkTypes.list({ filter: 'name contains "Process" sort by name desc' }))),
    ).toEqual({
      ids: ['PROCESS_MULTI', 'PROCESS'],
      total: 2,
    });
    expect(await idsOf(read((s) => s.checkTypes.list({ sort: 'id', limit: 2, offset: 3 })))).toEqual({
      ids: ['PROCESS', 'PROCESS_MULTI'],
      total: 5,
    });
  });

  it('read models: newer positions only, tombstones, absent rows tombstoned by range, pruning, live rows in bytewise pages, role attributes and role targets', async () => {
    const { work, read } = b!;
    const identities = (s: Stores) => s.identities;
    const i = (id: string, roleAttributes: string[] = [], name = `n-${id}`) => ({
      ...identityFixture(id, roleAttributes),
      name,
    });
    await work(async (s) => {
      const m = identities(s);
      expect(await m.apply(i('a', ['x']), 10, false)).toBe(true);
      expect(await m.apply(i('a', ['old']), 9, false)).toBe(false);
      // The same state at the same position is no change; a differing one is drift, and is fixed.
      expect(await m.apply(i('a', ['x']), 10, false)).toBe(false);
      expect(await m.apply(i('a', ['x', 'y']), 10, false)).toBe(true);
      expect(await m.positionOf('a')).toBe(10);
      expect(await m.positionOf('none')).toBeUndefined();
      expect(await m.tombstone('a', 12)).toBe(true);
      expect(await m.tombstone('a', 12)).toBe(false);
      expect(await m.tombstone('a', 11)).toBe(false);
      // No older event brings it back.
      expect(await m.apply(i('a', ['zombie']), 11, false)).toBe(false);
      expect(await m.positionOf('a')).toBe(12);
      expect(await m.apply(i('a', ['back']), 13, false)).toBe(true);
      expect(await m.tombstone('none', 1)).toBe(false);
    });
    // Pages of live rows, bytewise.
    const ids = ['b', 'B', 'a_1', 'a-1', 'A', 'ä', 'z'];
    await work(async (s) => {
      for (const id of ids) await identities(s).apply(i(id, [id === 'z' ? 'last' : 'x']), 20, false);
    });
    const live = [...ids, 'a'].sort(bytewise);
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const rows = await read((s) => identities(s).liveRows(after, undefined, 3));
      seen.push(...rows.map((r) => r.id));
      if (rows.length < 3) break;
      after = rows.at(-1)!.id;
    }
    expect(seen).toEqual(live);
    expect((await read((s) => identities(s).liveRows('B', 'a_1', 10))).map((r) => r.id)).toEqual(['a', 'a-1', 'a_1']);
    expect((await read((s) => identities(s).liveRows(undefined, undefined, 1)))[0]).toEqual({
      id: 'A',
      state: i('A', ['x']),
    });

    // An owner's page (a-1, z] that lacks some of its live rows says they are gone, unless newer.
    await work(async (s) => {
      expect(await identities(s).apply(i('b', ['x']), 40, false)).toBe(true);
      expect(await identities(s).tombstoneAbsent({ after: 'a-1', upTo: 'z' }, ['a_1'], 30)).toBe(1);
      expect(await identities(s).tombstoneAbsent({ after: 'a-1', upTo: 'z' }, ['a_1'], 30)).toBe(0);
      expect(await identities(s).tombstoneAbsent({ upTo: 'B' }, [], 30)).toBe(2);
    });
    expect((await read((s) => identities(s).liveRows(undefined, undefined, 20))).map((r) => r.id)).toEqual([
      'a',
      'a-1',
      'a_1',
      'b',
      'ä',
    ]);

    // Role attributes of live rows only, per read model; role targets see live rows only.
    await work(async (s) => {
      await s.services.apply(serviceFixture('s1', ['web', 'x']), 1, false);
      await s.services.apply(serviceFixture('s2', ['gone']), 1, true);
      await s.edgeRouters.apply(routerFixture('r1', ['edge']), 1, false);
      await s.checks.insert(mfaCheck('pc'));
    });
    const attributes = (source: 'identities' | 'services' | 'edgeRouters', filter?: string) =>
      read((s) => s[source].roleAttributes(filter === undefined ? {} : { filter })).then((p) => p.items);
    expect(await attributes('identities')).toEqual(['back', 'x']);
    expect(await attributes('identities', 'id != "x"')).toEqual(['back']);
    expect(await attributes('services')).toEqual(['web', 'x']);
    expect(await attributes('edgeRouters')).toEqual(['edge']);
    expect(await read((s) => s.targets.existing('identities', ['a', 'A', 'b', 'nope']))).toEqual(new Set(['a', 'b']));
    expect(await read((s) => s.targets.names('services', ['s1', 's2']))).toEqual(new Map([['s1', 'n-s1']]));
    expect(await read((s) => s.targets.existing('edgeRouters', []))).toEqual(new Set());
    expect(await read((s) => s.targets.names('postureChecks', ['pc', 'x']))).toEqual(new Map([['pc', 'check-pc']]));

    // Tombstones at or below the watermark go once old enough; newer ones stay.
    await work(async (s) => {
      await identities(s).apply(i('late'), 100, false);
      await identities(s).tombstone('late', 101);
    });
    const pruned = await waitFor(
      () => work((s) => identities(s).pruneTombstones(30, 0)),
      'tombstones to prune',
      5_000,
      5,
    );
    expect(pruned).toBe(3);
    expect(await read((s) => identities(s).positionOf('A'))).toBeUndefined();
    expect(await read((s) => identities(s).positionOf('late'))).toBe(101);
    expect(await work((s) => identities(s).pruneTombstones(200, 3600))).toBe(0);

    // The other read models keep their states alike.
    await work(async (s) => {
      const config: ConfigState = {
        id: 'c1',
        name: 'cfg',
        configTypeId: 'ct1',
        data: { port: 80 },
        tags: {},
        createdAt: fixedAt,
        updatedAt: fixedAt,
      };
      expect(await s.configs.apply(config, 5, false)).toBe(true);
      expect(await s.configTypes.apply({ ...config, name: 'host.v1', schema: {} }, 5, false)).toBe(true);
      expect(await s.overrides.apply({ id: 'i1', identityId: 'i1', serviceConfigs: [] }, 5, false)).toBe(true);
      expect(await s.configs.liveRows(undefined, undefined, 5)).toEqual([{ id: 'c1', state: config }]);
    });
  });

  it('derived access, read through relations, advice, client edge routers and the service view', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng']));
      await putIdentity(s, identityFixture('i2', ['ops']));
      await putIdentity(s, { ...identityFixture('a1', []), isAdmin: true });
      await putService(s, { ...serviceFixture('s1', ['web']), configs: ['c1'] });
      await putService(s, serviceFixture('s2', ['db']));
      await putService(s, serviceFixture('s3', ['web']));
      await putRouter(s, verifiedRouter('r1', ['edge']));
      await putRouter(s, verifiedRouter('r2', ['edge'], false));
      await putRouter(s, verifiedRouter('r3', []));
      await putCheck(
        s,
        mfaCheck('pc', {
          roleAttributes: ['mfa'],
          spec: {
            typeId: 'MFA',
            timeoutSeconds: 600,
            promptOnWake: true,
            promptOnUnlock: false,
            ignoreLegacyEndpoints: false,
          },
        }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp-dial', { roles: { identityRoles: ['#eng'], serviceRoles: ['#web'], postureCheckRoles: ['#mfa'] } }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp-bind', { type: 'Bind', roles: { identityRoles: ['@i2'], serviceRoles: ['@s1', '@s2'] } }),
      );
      await putPolicy(
        s,
        'edgeRouter',
        policy('erp', { type: null, roles: { identityRoles: ['#all'], edgeRouterRoles: ['#edge'] } }),
      );
      await putPolicy(
        s,
        'serviceEdgeRouter',
        policy('serp', { type: null, roles: { serviceRoles: ['#web'], edgeRouterRoles: ['@r1', '@r3'] } }),
      );
    });
    expect(await work((s) => s.links.differences())).toEqual([]);
    // From scratch again, nothing moves.
    expect(await work((s) => s.links.rebuildAll())).toEqual([]);
    const scope = await work((s) => s.links.servicePolicyScope('sp-dial'));
    expect({ identities: scope.identities.sort(), services: scope.services.sort() }).toEqual({
      identities: ['i1'],
      services: ['s1', 's3'],
    });
    // Access gained was announced per identity.
    expect(
      announced.filter((e) => e.type === 'identityAccess.changed').map((e) => (e.data as { id: string }).id),
    ).toEqual(['i1', 'i2']);

    // Relations: read from the derived tables, filtered and paged on the related rows.
    const rel = b!.read;
    expect(await rel((s) => s.relations.exists('identity', 'i1'))).toBe(true);
    expect(await rel((s) => s.relations.exists('identity', 'nope'))).toBe(false);
    expect(await rel((s) => s.relations.exists('servicePolicy', 'sp-dial'))).toBe(true);
    expect(await rel((s) => s.relations.exists('edgeRouterPolicy', 'sp-dial'))).toBe(false);
    expect(await idsOf(rel((s) => s.relations.identities({ from: 'service', id: 's1' }, { sort: 'id' })))).toEqual({
      ids: ['i1', 'i2'],
      total: 2,
    });
    expect(
      await idsOf(rel((s) => s.relations.identities({ from: 'service', id: 's1', accessType: 'bind' }, {}))),
    ).toEqual({ ids: ['i2'], total: 1 });
    expect(await idsOf(rel((s) => s.relations.identities({ from: 'servicePolicy', id: 'sp-dial' }, {})))).toEqual({
      ids: ['i1'],
      total: 1,
    });
    expect(
      await idsOf(rel((s) => s.relations.services({ from: 'identity', id: 'i2' }, { sort: 'name desc', limit: 1 }))),
    ).toEqual({
      ids: ['s2'],
      total: 2,
    });
    expect(
      await idsOf(
        rel((s) => s.relations.services({ from: 'identity', id: 'i2' }, { filter: 'anyOf(roleAttributes) = "web"' })),
      ),
    ).toEqual({ ids: ['s1'], total: 1 });
    expect(await idsOf(rel((s) => s.relations.edgeRouters({ from: 'identity', id: 'i1' }, { sort: 'id' })))).toEqual({
      ids: ['r1', 'r2'],
      total: 2,
    });
    expect(
      await idsOf(
        rel((s) => s.relations.edgeRouters({ from: 'service', id: 's1' }, { filter: 'isVerified = true sort by id' })),
      ),
    ).toEqual({ ids: ['r1', 'r3'], total: 2 });
    expect(await idsOf(rel((s) => s.relations.policies('service', { from: 'identity', id: 'i2' }, {})))).toEqual({
      ids: ['sp-bind'],
      total: 1,
    });
    expect(
      await idsOf(rel((s) => s.relations.policies('serviceEdgeRouter', { from: 'edgeRouter', id: 'r3' }, {}))),
    ).toEqual({ ids: ['serp'], total: 1 });
    expect(await idsOf(rel((s) => s.relations.postureChecks({ from: 'servicePolicy', id: 'sp-dial' }, {})))).toEqual({
      ids: ['pc'],
      total: 1,
    });
    expect(
      (await rel((s) => s.relations.services({ from: 'identity', id: 'i1' }, { filter: 'id = "s1"' }))).items,
    ).toEqual([{ ...serviceFixture('s1', ['web']), configs: ['c1'] }]);

    // Advice: one pair, one read.
    expect(await read((s) => s.advice.identity('i1'))).toEqual(identityFixture('i1', ['eng']));
    expect(await read((s) => s.advice.service('nope'))).toBeUndefined();
    expect(await read((s) => s.advice.reachability('i1', 's1'))).toEqual({
      dial: true,
      bind: false,
      identityRouterCount: 2,
      serviceRouterCount: 2,
      commonRouters: [{ ...verifiedRouter('r1', ['edge']), presence: null }],
    });
    expect(await read((s) => s.advice.reachability('i2', 's2'))).toEqual({
      dial: false,
      bind: true,
      identityRouterCount: 2,
      serviceRouterCount: 0,
      commonRouters: [],
    });

    // The client's edge routers: verified ones, those of the identity, those shared with a service.
    expect(await idsOf(read((s) => s.clientRouters.verifiedEdgeRouters(undefined, { sort: 'id' })))).toEqual({
      ids: ['r1', 'r3'],
      total: 2,
    });
    expect(await idsOf(read((s) => s.clientRouters.verifiedEdgeRouters('i1', {})))).toEqual({ ids: ['r1'], total: 1 });
    expect(await idsOf(read((s) => s.clientRouters.sharedEdgeRouters('i1', 's1', {})))).toEqual({
      ids: ['r1'],
      total: 1,
    });
    expect(await read((s) => s.clientRouters.serviceVisible('s1', 'i1', false))).toBe(true);
    expect(await read((s) => s.clientRouters.serviceVisible('s2', 'i1', false))).toBe(false);
    expect(await read((s) => s.clientRouters.serviceVisible('s2', 'i1', true))).toBe(true);

    // The service view: the viewer's services with their access; an administrator sees every one.
    const i1 = { identityId: 'i1', isAdmin: false };
    const view = (viewer: { identityId: string; isAdmin: boolean }, input: ListInput, scope = {}) =>
      read((s) => s.view.list(viewer, input, scope)).then((p) => ({
        rows: p.items.map((r) => [r.service.id, r.dial, r.bind]),
        total: p.totalCount,
      }));
    expect(await view(i1, { sort: 'name' })).toEqual({
      rows: [
        ['s1', true, false],
        ['s3', true, false],
      ],
      total: 2,
    });
    expect(await view({ identityId: 'a1', isAdmin: true }, { sort: 'id', limit: 2 })).toEqual({
      rows: [
        ['s1', false, false],
        ['s2', false, false],
      ],
      total: 3,
    });
    expect(
      await view({ identityId: 'i2', isAdmin: false }, {}, { roleFilter: { roles: ['#db'], semantic: 'AnyOf' } }),
    ).toEqual({
      rows: [['s2', false, true]],
      total: 1,
    });
    expect(await view(i1, {}, { configId: 'c1' })).toEqual({ rows: [['s1', true, false]], total: 1 });
    expect(await view(i1, { filter: 'name = "n-s3"' })).toEqual({ rows: [['s3', true, false]], total: 1 });
    expect(await read((s) => s.view.get(i1, 's1'))).toEqual({
      service: { ...serviceFixture('s1', ['web']), configs: ['c1'] },
      dial: true,
      bind: false,
    });
    expect(await read((s) => s.view.get(i1, 's2'))).toBeUndefined();
    expect(await read((s) => s.view.get({ identityId: 'i1', isAdmin: true }, 's2'))).toMatchObject({
      dial: false,
      bind: false,
    });
    expect(await read((s) => s.view.access({ identityId: 'i2', isAdmin: false }, ['s1', 's2', 's3']))).toEqual(
      new Map([
        ['s1', { dial: false, bind: true }],
        ['s2', { dial: false, bind: true }],
      ]),
    );
    expect(await read((s) => s.view.identityByIdOrName('n-i1'))).toEqual({ id: 'i1', isAdmin: false });
    expect(await read((s) => s.view.identityByIdOrName('a1'))).toEqual({ id: 'a1', isAdmin: true });

    // Losing an entity loses its access everywhere.
    await work(async (s) => {
      await putService(s, serviceFixture('s3', ['web']), true);
      await putIdentity(s, identityFixture('i2', ['ops']), true);
      await putRouter(s, verifiedRouter('r1', ['edge']), true);
    });
    expect(await work((s) => s.links.differences())).toEqual([]);
    expect(await rel((s) => s.relations.exists('service', 's3'))).toBe(false);
    expect(await idsOf(rel((s) => s.relations.identities({ from: 'service', id: 's1' }, {})))).toEqual({
      ids: ['i1'],
      total: 1,
    });
    expect(await read((s) => s.advice.reachability('i1', 's1'))).toMatchObject({
      identityRouterCount: 1,
      serviceRouterCount: 1,
      commonRouters: [],
    });
    expect(await read((s) => s.clientRouters.serviceVisible('s3', 'a1', true))).toBe(false);
    expect(await view(i1, {})).toEqual({ rows: [['s1', true, false]], total: 1 });
  });

  it('service view: configs and their types by id or name, overrides, posture checks, last change, API session config types, creation time', async () => {
    const { work, read } = b!;
    const config = (id: string, configTypeId: string): ConfigState => ({
      id,
      name: `cfg-${id}`,
      configTypeId,
      data: { id },
      tags: {},
      createdAt: fixedAt,
      updatedAt: fixedAt,
    });
    const type = (id: string, name: string): ConfigTypeState => ({
      id,
      name,
      schema: {},
      tags: {},
      createdAt: fixedAt,
      updatedAt: fixedAt,
    });
    await work(async (s) => {
      await s.configs.apply(config('c1', 'ct1'), 1, false);
      await s.configs.apply(config('c2', 'ct2'), 1, true);
      await s.configTypes.apply(type('ct1', 'host.v1'), 1, false);
      await s.configTypes.apply(type('ct2', 'intercept.v1'), 1, true);
      await s.overrides.apply(
        { id: 'i1', identityId: 'i1', serviceConfigs: [{ serviceId: 's1', configId: 'c1' }] },
        1,
        false,
      );
      await s.overrides.apply(
        { id: 'i2', identityId: 'i2', serviceConfigs: [{ serviceId: 's1', configId: 'c1' }] },
        1,
        true,
      );
      await putIdentity(s, identityFixture('i1', []));
    });
    expect((await read((s) => s.view.configTypeIds(['host.v1', 'ct1', 'intercept.v1', 'nope']))).sort()).toEqual([
      'ct1',
    ]);
    expect(await read((s) => s.view.configs(['c1', 'c2', 'nope']))).toEqual([config('c1', 'ct1')]);
    expect(await read((s) => s.view.configs([]))).toEqual([]);
    expect(await read((s) => s.view.configTypeNames(['ct1', 'ct2']))).toEqual(new Map([['ct1', 'host.v1']]));
    expect(await read((s) => s.view.configExists('c1'))).toBe(true);
    expect(await read((s) => s.view.configExists('c2'))).toBe(false);
    expect(await read((s) => s.view.overrides('i1'))).toEqual([{ serviceId: 's1', configId: 'c1' }]);
    expect(await read((s) => s.view.overrides('i2'))).toEqual([]);
    expect(await read((s) => s.view.identityCreatedAt('i1'))).toEqual(new Date(fixedAt));
    expect(await read((s) => s.view.identityCreatedAt('nope'))).toBeUndefined();

    expect(await read((s) => s.view.postureChecksExist())).toBe(false);
    expect(await read((s) => s.postureData.anyCheckExists())).toBe(false);
    await work((s) => s.checks.insert(mfaCheck('pc')));
    expect(await read((s) => s.view.postureChecksExist())).toBe(true);
    expect(await read((s) => s.postureData.anyCheckExists())).toBe(true);

    // Service updates: per identity, and `*` for administrators; the times only move forward.
    expect(await read((s) => s.view.lastChange('i1', false))).toBeUndefined();
    await work((s) => s.links.markServiceUpdates({ kind: 'identities', ids: ['i1'] }));
    const first = (await read((s) => s.view.lastChange('i1', false)))!;
    expect(first).toBeInstanceOf(Date);
    expect(await read((s) => s.view.lastChange('i2', false))).toBeUndefined();
    expect((await read((s) => s.view.lastChange('i2', true)))!.getTime()).toBe(first.getTime());
    await waitFor(
      async () => {
        await work((s) => s.links.markServiceUpdates({ kind: 'identities', ids: ['i1'] }));
        return (await read((s) => s.view.lastChange('i1', false)))!.getTime() > first.getTime();
      },
      'a later change',
      5_000,
      5,
    );

    // The config types an API session asked for, while it lives.
    await work((s) =>
      s.apiSessions.started({
        id: 'as1',
        identityId: 'i1',
        authMethod: 'password',
        isMfaRequired: false,
        isMfaComplete: false,
        configTypes: ['ct1', 'all'],
        createdAt: fixedAt,
      }),
    );
    expect(await read((s) => s.view.apiSessionConfigTypes('as1'))).toEqual(['ct1', 'all']);
    expect(await read((s) => s.view.apiSessionConfigTypes('nope'))).toEqual([]);
    expect(await work((s) => s.apiSessions.ended('as1', 'i1', new Date().toISOString()))).toBe(0);
    expect(await read((s) => s.view.apiSessionConfigTypes('as1'))).toEqual([]);
  });

  it('sessions: one per API session, service and type, none for an ended API session; get, find, list, delete; creation facts and the decisions on them; failures', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putIdentity(s, identityFixture('ci', ['clear']));
      for (const id of ['c-s1', 'c-s2', 'c-posture', 'c-norouter']) await putService(s, serviceFixture(id, ['clear']));
      await putService(s, serviceFixture('c-hidden', []));
      await putRouter(s, routerFixture('cr', ['clear']));
      await putCheck(s, mfaCheck('c-mfa', { roleAttributes: ['mfa'] }));
      await putPolicy(
        s,
        'service',
        policy('cp-dial', { roles: { identityRoles: ['#clear'], serviceRoles: ['@c-s1', '@c-s2', '@c-norouter'] } }),
      );
      await putPolicy(
        s,
        'service',
        policy('cp-posture', {
          roles: { identityRoles: ['#clear'], serviceRoles: ['@c-posture'], postureCheckRoles: ['#mfa'] },
        }),
      );
      await putPolicy(
        s,
        'edgeRouter',
        policy('cp-erp', { type: null, roles: { identityRoles: ['#clear'], edgeRouterRoles: ['@cr'] } }),
      );
      await putPolicy(
        s,
        'serviceEdgeRouter',
        policy('cp-serp', {
          type: null,
          roles: { serviceRoles: ['@c-s1', '@c-s2', '@c-posture'], edgeRouterRoles: ['@cr'] },
        }),
      );
    });
    const session = (id: string, apiSessionId: string, serviceId: string, o: Partial<Session> = {}): Session => ({
      id,
      token: `token-${id}`,
      apiSessionId,
      identityId: 'ci',
      serviceId,
      type: 'Dial',
      tags: {},
      createdAt: at(),
      updatedAt: at(),
      ...o,
    });
    const x1 = session('x1', 'as1', 'c-s1', { tags: { k: 'v' } });
    expect(await read((s) => s.sessions.createIfLive(x1))).toEqual(x1);
    // A second creation of the pair answers the first session.
    expect(await read((s) => s.sessions.createIfLive(session('x1b', 'as1', 'c-s1')))).toEqual(x1);
    expect(
      await read((s) => s.sessions.createIfLive(session('x2', 'as1', 'c-s1', { type: 'Bind', createdAt: at(1) }))),
    ).toMatchObject({
      id: 'x2',
    });
    expect(
      await read((s) => s.sessions.createIfLive(session('x3', 'as2', 'c-s2', { createdAt: at(2) }))),
    ).toMatchObject({
      id: 'x3',
    });
    expect(
      await read((s) =>
        s.sessions.createIfLive(session('X4', 'as3', 'c-s1', { identityId: 'other', createdAt: at(3) })),
      ),
    ).toMatchObject({
      id: 'X4',
    });
    expect(await read((s) => s.sessions.get('x1'))).toEqual(x1);
    expect(await read((s) => s.sessions.get('x1b'))).toBeUndefined();
    expect(await read((s) => s.sessions.findFor('as1', 'c-s1', 'Bind'))).toMatchObject({ id: 'x2' });
    expect(await read((s) => s.sessions.findFor('as1', 'c-s2', 'Bind'))).toBeUndefined();

    const list = (input: ListInput, identityId?: string) =>
      idsOf(read((s) => s.sessions.list(input, identityId === undefined ? {} : { identityId })));
    expect(await list({ sort: 'id' })).toEqual({ ids: ['X4', 'x1', 'x2', 'x3'], total: 4 });
    expect(await list({ sort: 'createdAt desc' }, 'ci')).toEqual({ ids: ['x3', 'x2', 'x1'], total: 3 });
    expect(await list({ filter: 'service.name = "n-c-s1" and type = "Dial" sort by id' })).toEqual({
      ids: ['X4', 'x1'],
      total: 2,
    });
    expect(await list({ filter: 'apiSession = "as1" sort by id', limit: 1, offset: 1 })).toEqual({
      ids: ['x2'],
      total: 2,
    });
    expect(await list({ filter: 'token = "token-x3"' })).toEqual({ ids: ['x3'], total: 1 });
    expect(await read((s) => s.sessions.serviceNames(['c-s1', 'nope']))).toEqual(new Map([['c-s1', 'n-c-s1']]));
    expect(await read((s) => s.sessions.sharedEdgeRouters('ci', 'c-s1', 25))).toEqual([
      { ...routerFixture('cr', ['clear']), presence: null },
    ]);
    expect(await read((s) => s.sessions.sharedEdgeRouters('ci', 'c-norouter', 25))).toEqual([]);
    expect(await read((s) => s.sessions.identityExists('ci'))).toBe(true);
    expect(await read((s) => s.sessions.identityExists('nope'))).toBe(false);
    const granting = (type: 'Dial' | 'Bind') =>
      read(async (s) => (await s.postureData.grantingPolicies('ci', ['c-s1'], type)).map((g) => g.policyId));
    expect(await granting('Dial')).toEqual(['cp-dial']);
    expect(await granting('Bind')).toEqual([]);

    // What a creation decides on, read at once; the domain's decision on it.
    const viewer = { identityId: 'ci', isAdmin: false };
    const reuse = (apiSessionId: string) => ({ apiSessionId, type: 'Dial' as const });
    const contextOf = (serviceId: string, apiSessionId: string) =>
      read((s) => s.sessions.creationFacts(viewer, serviceId, reuse(apiSessionId), 25));
    expect(await contextOf('c-s1', 'as1')).toEqual({
      access: { service: serviceFixture('c-s1', ['clear']), dial: true, bind: false },
      existing: x1,
      edgeRouters: [{ ...routerFixture('cr', ['clear']), presence: null }],
      postureChecked: false,
    });
    expect(await contextOf('c-posture', 'as1')).toMatchObject({
      postureChecked: true,
    });
    expect(await contextOf('c-hidden', 'as1')).toBeUndefined();
    const clear = await contextOf('c-s2', 'as5');
    expect(clear?.existing).toBeUndefined();
    expect(decideCreation(clear, 'Dial', 'unknown')).toEqual({ outcome: 'insert' });
    expect(await read((s) => s.sessions.createIfLive(session('y1', 'as5', 'c-s2')))).toEqual(
      session('y1', 'as5', 'c-s2'),
    );
    expect(decideCreation(await contextOf('c-s2', 'as5'), 'Dial', 'unknown')).toEqual({
      outcome: 'existing',
      session: session('y1', 'as5', 'c-s2'),
    });
    for (const [serviceId, outcome] of [
      ['c-posture', 'evaluatePosture'],
      ['c-norouter', 'noEdgeRouters'],
      ['c-hidden', 'notVisible'],
    ])
      expect(decideCreation(await contextOf(serviceId!, 'as6'), 'Dial', 'unknown'), serviceId).toEqual({ outcome });

    // An API session that ended takes its sessions, and no new one is made for it.
    expect(await work((s) => s.apiSessions.ended('as1', 'ci', new Date().toISOString()))).toBe(2);
    expect(await read((s) => s.sessions.get('x1'))).toBeUndefined();
    expect(await read((s) => s.sessions.createIfLive(session('x5', 'as1', 'c-s2')))).toBe('ended');
    expect(await read((s) => s.sessions.delete('x3'))).toBe(true);
    expect(await read((s) => s.sessions.delete('x3'))).toBe(false);

    // Refused requests: the last `keep` of each identity, oldest first.
    const failure = (n: number) => ({
      apiSessionId: 'as2',
      serviceId: 'c-posture',
      serviceName: 'n-c-posture',
      sessionType: 'Dial' as const,
      policyFailures: [{ policyId: 'cp-posture', policyName: 'cp-posture', checks: [{ id: `c${n}` }] }] as never,
      when: at(n),
    });
    await work(async (s) => {
      for (const n of [1, 2, 3]) await s.sessions.recordFailure('ci', failure(n), 2);
      await s.sessions.recordFailure('other', failure(4), 2);
    });
    expect(await read((s) => s.sessions.failures('ci'))).toEqual([failure(2), failure(3)]);
    expect(await read((s) => s.sessions.failures('nobody'))).toEqual([]);
  });

  it('posture data: the last response of each kind, processes per check and path, API sessions with MFA and endpoint state, prompted services, granting policies and their checks', async () => {
    const { work, read } = b!;
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng']));
      await putService(s, serviceFixture('s1', ['web']));
      await putService(s, serviceFixture('s2', ['web']));
      await putCheck(
        s,
        mfaCheck('wake', {
          roleAttributes: ['wake'],
          spec: {
            typeId: 'MFA',
            timeoutSeconds: 600,
            promptOnWake: true,
            promptOnUnlock: false,
            ignoreLegacyEndpoints: false,
          },
        }),
      );
      await putCheck(
        s,
        mfaCheck('wake-short', {
          roleAttributes: ['wake'],
          spec: {
            typeId: 'MFA',
            timeoutSeconds: 120,
            promptOnWake: true,
            promptOnUnlock: true,
            ignoreLegacyEndpoints: false,
          },
        }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp1', { roles: { identityRoles: ['#eng'], serviceRoles: ['@s1'], postureCheckRoles: ['#wake'] } }),
      );
      await putPolicy(
        s,
        'service',
        policy('sp2', { type: 'Bind', roles: { identityRoles: ['#eng'], serviceRoles: ['@s2'] } }),
      );
    });
    expect(await read((s) => s.postureData.identityExists('i1'))).toBe(true);
    expect(await read((s) => s.postureData.identityExists('nope'))).toBe(false);

    await work(async (s) => {
      await s.apiSessions.started({
        id: 'as1',
        identityId: 'i1',
        authMethod: 'password',
        isMfaRequired: true,
        isMfaComplete: false,
        configTypes: [],
        createdAt: fixedAt,
      });
      await s.apiSessions.mfaPassed('as1', 'i1', at(5).toISOString());
      await s.postureData.record(
        'i1',
        'as1',
        [
          { kind: 'OS', postureCheckId: 'os', type: 'Linux', version: '6.1.0', build: '1' },
          { kind: 'MAC', postureCheckId: 'mac', addresses: ['aabbccddeeff'] },
          { kind: 'DOMAIN', postureCheckId: 'dom', name: 'corp' },
          {
            kind: 'PROCESS',
            postureCheckId: 'p1',
            path: '/a',
            isRunning: true,
            binaryHash: 'h1',
            signerFingerprints: ['f1'],
          },
          {
            kind: 'PROCESS',
            postureCheckId: 'p2',
            path: '/b',
            isRunning: false,
            binaryHash: '',
            signerFingerprints: [],
          },
          { kind: 'ENDPOINT_STATE', postureCheckId: 'es', woken: true, unlocked: false },
        ],
        at(10),
      );
      await s.postureData.record(
        'i1',
        'as2',
        [
          { kind: 'OS', postureCheckId: 'os', type: 'Windows', version: '10.0.1', build: '2' },
          {
            kind: 'PROCESS',
            postureCheckId: 'p1',
            path: '/c',
            isRunning: true,
            binaryHash: 'h3',
            signerFingerprints: [],
          },
          { kind: 'ENDPOINT_STATE', postureCheckId: 'es', woken: false, unlocked: true },
        ],
        at(20),
      );
      await s.postureData.record(
        'i1',
        'as1',
        [{ kind: 'ENDPOINT_STATE', postureCheckId: 'es', woken: false, unlocked: true }],
        at(30),
      );
    });
    const loaded = await read((s) => s.postureData.load('i1'));
    const reported = (postureCheckId: string, apiSessionId: string, ms: number) => ({
      postureCheckId,
      apiSessionId,
      reportedAt: at(ms),
    });
    expect(loaded.os).toEqual({ ...reported('os', 'as2', 20), type: 'Windows', version: '10.0.1', build: '2' });
    expect(loaded.mac).toEqual({ ...reported('mac', 'as1', 10), addresses: ['aabbccddeeff'] });
    expect(loaded.domain).toEqual({ ...reported('dom', 'as1', 10), name: 'corp' });
    const p1c = { ...reported('p1', 'as2', 20), path: '/c', isRunning: true, binaryHash: 'h3', signerFingerprints: [] };
    const p2 = { ...reported('p2', 'as1', 10), path: '/b', isRunning: false, binaryHash: '', signerFingerprints: [] };
    expect(loaded.processes).toEqual([p2, p1c]);
    expect([...loaded.processByPath.keys()].sort()).toEqual(['/a', '/b', '/c']);
    expect(loaded.processByPath.get('/c')).toEqual(p1c);
    expect(loaded.apiSessions).toEqual(
      new Map([
        [
          'as1',
          {
            apiSessionId: 'as1',
            live: true,
            mfaPassedAt: at(5),
            wokenAt: at(10),
            unlockedAt: at(30),
            endpointStateAt: at(30),
          },
        ],
        [
          'as2',
          {
            apiSessionId: 'as2',
            live: false,
            mfaPassedAt: null,
            wokenAt: null,
            unlockedAt: at(20),
            endpointStateAt: at(20),
          },
        ],
      ]),
    );
    expect(await read((s) => s.postureData.postureData('i1'))).toEqual(loaded);
    expect(await read((s) => s.postureData.load('nobody'))).toEqual({
      processes: [],
      processByPath: new Map(),
      apiSessions: new Map(),
    });
    // An API session that ends forgets its endpoint state; the identity's reports stay.
    await work(async (s) => {
      await s.apiSessions.ended('as1', 'i1', new Date().toISOString());
      await s.apiSessions.forgetPosture('as1');
    });
    const after = await read((s) => s.postureData.load('i1'));
    expect(after.apiSessions.has('as1')).toBe(false);
    expect(after.os).toEqual(loaded.os);

    // Services whose MFA check prompts on wake or unlock, with the least timeout above the grace left.
    const prompted = (onWake: boolean, onUnlock: boolean, above: number) =>
      read((s) => s.postureData.promptedServices('i1', onWake, onUnlock, above));
    expect(await prompted(true, false, 0)).toEqual([{ id: 's1', name: 'n-s1', timeout: 120 }]);
    expect(await prompted(true, false, 300)).toEqual([{ id: 's1', name: 'n-s1', timeout: 600 }]);
    expect(await prompted(false, true, 300)).toEqual([]);
    expect(await prompted(false, true, 0)).toEqual([{ id: 's1', name: 'n-s1', timeout: 120 }]);
    expect(await prompted(true, true, 600)).toEqual([]);

    expect(await read((s) => s.postureData.grantingPolicies('i1', ['s1', 's2', 'nope']))).toEqual([
      { serviceId: 's1', policyId: 'sp1', policyName: 'sp1', type: 'Dial', hasChecks: true },
      { serviceId: 's2', policyId: 'sp2', policyName: 'sp2', type: 'Bind', hasChecks: false },
    ]);
    expect(await read((s) => s.postureData.grantingPolicies('i1', ['s1', 's2'], 'Bind'))).toEqual([
      { serviceId: 's2', policyId: 'sp2', policyName: 'sp2', type: 'Bind', hasChecks: false },
    ]);
    expect(await read((s) => s.postureData.grantingPolicies('i1', []))).toEqual([]);
    const checks = await read((s) => s.postureData.checksOfPolicies(['sp1', 'sp2']));
    expect([...checks.keys()]).toEqual(['sp1']);
    expect(checks.get('sp1')!.map((c) => c.id)).toEqual(['wake', 'wake-short']);
    expect(checks.get('sp1')![0]).toEqual(await read((s) => s.checks.get('wake')));
  });

  it('orders by name and id bytewise wherever a read orders them: the routers a session gets, common routers, granting policies and their checks, prompted services', async () => {
    const { work, read } = b!;
    // Names and ids whose bytewise order (upper case first) is not a linguistic collation's.
    const named = (id: string, name: string) => ({ ...routerFixture(id, ['all']), name });
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng']));
      await putService(s, serviceFixture('s1', ['web']));
      await putService(s, serviceFixture('S2', ['web']));
      for (const [id, name] of [
        ['ra', 'alpha'],
        ['rZ', 'Zeta'],
        ['rb', 'beta'],
      ])
        await putRouter(s, named(id!, name!));
      for (const [id, name] of [
        ['pc-a', 'alpha'],
        ['pc-W', 'Wake'],
      ])
        await putCheck(
          s,
          mfaCheck(id!, {
            name: name!,
            roleAttributes: ['wake'],
            spec: {
              typeId: 'MFA',
              timeoutSeconds: -1,
              promptOnWake: true,
              promptOnUnlock: false,
              ignoreLegacyEndpoints: false,
            },
          }),
        );
      await putPolicy(
        s,
        'service',
        policy('p1', { roles: { identityRoles: ['#eng'], serviceRoles: ['#web'], postureCheckRoles: ['#wake'] } }),
      );
      await putPolicy(s, 'service', policy('P2', { roles: { identityRoles: ['#eng'], serviceRoles: ['#web'] } }));
      await putPolicy(
        s,
        'edgeRouter',
        policy('erp', { type: null, roles: { identityRoles: ['#all'], edgeRouterRoles: ['#all'] } }),
      );
      await putPolicy(
        s,
        'serviceEdgeRouter',
        policy('serp', { type: null, roles: { serviceRoles: ['#all'], edgeRouterRoles: ['#all'] } }),
      );
    });
    const byName = ['rZ', 'ra', 'rb'];
    expect((await read((s) => s.sessions.sharedEdgeRouters('i1', 's1', 2))).map((r) => r.id)).toEqual(
      byName.slice(0, 2),
    );
    // A creation's facts: its first routers.
    const context = await read((s) =>
      s.sessions.creationFacts({ identityId: 'i1', isAdmin: false }, 's1', { apiSessionId: 'as1', type: 'Dial' }, 2),
    );
    expect(context!.edgeRouters.map((r) => r.id)).toEqual(byName.slice(0, 2));
    expect((await read((s) => s.advice.reachability('i1', 's1'))).commonRouters.map((r) => r.id)).toEqual(byName);
    expect(
      (await read((s) => s.postureData.grantingPolicies('i1', ['s1', 'S2']))).map((g) => [g.serviceId, g.policyId]),
    ).toEqual([
      ['S2', 'P2'],
      ['S2', 'p1'],
      ['s1', 'P2'],
      ['s1', 'p1'],
    ]);
    expect((await read((s) => s.postureData.checksOfPolicies(['p1']))).get('p1')!.map((c) => c.name)).toEqual([
      'Wake',
      'alpha',
    ]);
    expect((await read((s) => s.postureData.promptedServices('i1', true, false, 0))).map((p) => p.id)).toEqual([
      'S2',
      's1',
    ]);
  });

  it('router presence: newer positions only; every read of routers carries it, connected first where the reference sorts so; the facts of a session used through a router', async () => {
    const { work, read } = b!;
    const named = (id: string, name: string) => ({ ...routerFixture(id, ['edge']), name });
    await work(async (s) => {
      await putIdentity(s, identityFixture('i1', ['eng']));
      await putService(s, serviceFixture('s1', ['web']));
      for (const [id, name] of [
        ['ra', 'alpha'],
        ['rb', 'beta'],
        ['rc', 'gamma'],
      ])
        await putRouter(s, named(id!, name!));
      await putPolicy(s, 'service', policy('p1', { roles: { identityRoles: ['#eng'], serviceRoles: ['#web'] } }));
      await putPolicy(
        s,
        'edgeRouter',
        policy('erp', { type: null, roles: { identityRoles: ['#eng'], edgeRouterRoles: ['#edge'] } }),
      );
      await putPolicy(
        s,
        'serviceEdgeRouter',
        policy('serp', { type: null, roles: { serviceRoles: ['#web'], edgeRouterRoles: ['@ra', '@rc'] } }),
      );
      expect(await s.routerPresence.apply(presenceFixture('rc'), ++position, false)).toBe(true);
      expect(await s.routerPresence.apply(presenceFixture('rc', { hostname: 'stale' }), position - 1, false)).toBe(
        false,
      );
      expect(await s.routerPresence.apply(offlinePresenceFixture('rb'), ++position, false)).toBe(true);
    });
    expect(await read((s) => s.routerPresence.current('rc'))).toEqual({
      state: presenceFixture('rc'),
      position: position - 1,
    });
    const ra = { ...named('ra', 'alpha'), presence: null };
    const rb = { ...named('rb', 'beta'), presence: offlinePresenceFixture('rb') };
    const rc = { ...named('rc', 'gamma'), presence: presenceFixture('rc') };
    // A session's routers and the client's routers of a service: connected first, then by name.
    expect(await read((s) => s.sessions.sharedEdgeRouters('i1', 's1', 25))).toEqual([rc, ra]);
    // A creation's facts: its routers.
    const context = await read((s) =>
      s.sessions.creationFacts(
        { identityId: 'i1', isAdmin: false },
        's1',
        { apiSessionId: 'as-ctx', type: 'Dial' },
        25,
      ),
    );
    expect(context!.edgeRouters).toEqual([rc, ra]);
    expect(
      (await read((s) => s.clientRouters.sharedEdgeRouters('i1', 's1', { sort: 'connected desc' }))).items,
    ).toEqual([rc, ra]);
    // Everywhere else in the order asked for, each with its presence.
    expect((await read((s) => s.advice.reachability('i1', 's1'))).commonRouters).toEqual([ra, rc]);
    expect((await read((s) => s.clientRouters.verifiedEdgeRouters('i1', { sort: 'id' }))).items).toEqual([ra, rb, rc]);
    expect((await read((s) => s.relations.edgeRouters({ from: 'identity', id: 'i1' }, { sort: 'id' }))).items).toEqual([
      ra,
      rb,
      rc,
    ]);
    expect(
      await idsOf(read((s) => s.relations.edgeRouters({ from: 'service', id: 's1' }, { filter: 'online = true' }))),
    ).toEqual({ ids: ['rc'], total: 1 });

    // What a router's question about a session reads, in one statement.
    const created = await read((s) =>
      s.sessions.createIfLive({
        id: 'use-1',
        token: 'use-token',
        apiSessionId: 'as1',
        identityId: 'i1',
        serviceId: 's1',
        type: 'Dial',
        tags: {},
        createdAt: new Date(fixedAt),
        updatedAt: new Date(fixedAt),
      }),
    );
    expect(created).toMatchObject({ id: 'use-1' });
    const facts = {
      session: { id: 'use-1', apiSessionId: 'as1', identityId: 'i1', serviceId: 's1', type: 'Dial' },
      apiSessionEnded: false,
      identityLive: true,
      identityIsAdmin: false,
      serviceLive: true,
      identityReachesRouter: true,
      serviceReachesRouter: true,
      typePermitted: true,
    };
    expect(await read((s) => s.sessions.useFacts('use-token', 'rc'))).toEqual(facts);
    expect(await read((s) => s.sessions.useFacts('use-token', 'rb'))).toEqual({
      ...facts,
      serviceReachesRouter: false,
    });
    expect(await read((s) => s.sessions.useFacts('use-token', 'nope'))).toEqual({
      ...facts,
      identityReachesRouter: false,
      serviceReachesRouter: false,
    });
    expect(await read((s) => s.sessions.useFacts('no-such-token', 'rc'))).toBeUndefined();
    await work((s) =>
      s.servicePolicies.delete('p1').then(() => access.policyChanged(s.links, events, 'service', 'p1')),
    );
    await work((s) => putService(s, serviceFixture('s1', ['web']), true));
    await work((s) => s.apiSessions.ended('as1', 'i0', new Date().toISOString()));
    expect(await read((s) => s.sessions.useFacts('use-token', 'rc'))).toBeUndefined();
  });

  it('a read-modify-write under forUpdate waits for the transaction holding the row: both changes survive', async () => {
    const { work, database, read } = b!;
    await work(async (s) => {
      await s.servicePolicies.insert(policy('sp'));
      await s.edgeRouterPolicies.insert(policy('ep', { type: null }));
      await s.serviceEdgeRouterPolicies.insert(policy('sep', { type: null }));
      await s.checks.insert(mfaCheck('pc'));
    });
    const bump = (tags: Record<string, unknown>) => ({ ...tags, n: Number(tags.n ?? 0) + 1 });
    for (const kind of ['servicePolicies', 'edgeRouterPolicies', 'serviceEdgeRouterPolicies'] as const) {
      const id = { servicePolicies: 'sp', edgeRouterPolicies: 'ep', serviceEdgeRouterPolicies: 'sep' }[kind];
      await lockedReadModifyWrites(
        work,
        database,
        (s, lock) => s[kind].get(id, lock),
        (s, p) => s[kind].update({ ...p, tags: bump(p.tags) }),
      );
      expect((await read((s) => s[kind].get(id)))!.tags, kind).toEqual({ n: 2 });
    }
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.checks.get('pc', lock),
      (s, c) => s.checks.update({ ...c, version: c.version + 1 }),
    );
    expect((await read((s) => s.checks.get('pc')))!.version).toBe(3);
  });
});
