import { pgErrorOf } from '@ziti/platform';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/infra.ts';
import type { IntegrityJobStore, RateLimitStore } from '../src/maintenance/database-maintenance.ports.ts';
import { PgIntegrityJobStore, PgRateLimitStore } from '../src/maintenance/maintenance.store.ts';
import type { Config, ConfigType, Router, RouterKind, Service, Terminator } from '../src/shared/model.domain.ts';
import type { InventoryStores } from '../src/shared/stores.ports.ts';
import { inventoryDatabase } from './support.ts';
import {
  apiError,
  at,
  bytewise,
  counter,
  emptier,
  lockedReadModifyWrites,
  rejection,
  storeTargets,
} from '../../../test/support/store-contract.ts';

/**
 * inventory's stores as one contract run on the real Postgres and on PGlite (what `npm start`
 * uses): the same SQL must behave the same on both. Each store is driven through its port
 * (`InventoryStores`, `IntegrityJobStore`, `RateLimitStore`), as the domain drives it. Each target is one database of this file (an
 * in-memory PGlite takes seconds to open), emptied after every case: every case starts from a
 * freshly migrated database.
 */

const configType = (id: string, o: Partial<ConfigType> = {}): ConfigType => ({
  id,
  name: `type-${id}`,
  schema: { type: 'object' },
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const config = (id: string, configTypeId: string, o: Partial<Config> = {}): Config => ({
  id,
  name: `config-${id}`,
  configTypeId,
  data: {},
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const service = (id: string, o: Partial<Service> = {}): Service => ({
  id,
  name: `service-${id}`,
  terminatorStrategy: 'smartrouting',
  roleAttributes: [],
  configs: [],
  encryptionRequired: true,
  maxIdleTimeMillis: 0,
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const router = (id: string, kind: RouterKind, o: Partial<Router> = {}): Router => ({
  id,
  kind,
  name: `router-${id}`,
  cost: 0,
  noTraversal: false,
  disabled: false,
  isVerified: false,
  isTunnelerEnabled: false,
  fingerprint: null,
  certPem: null,
  unverifiedFingerprint: null,
  unverifiedCertPem: null,
  roleAttributes: [],
  appData: {},
  hostname: '',
  supportedProtocols: {},
  versionInfo: null,
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const terminator = (id: string, serviceId: string, routerId: string, o: Partial<Terminator> = {}): Terminator => ({
  id,
  serviceId,
  routerId,
  binding: 'edge',
  address: `hosted:${id}`,
  instanceId: '',
  instanceSecretHash: null,
  cost: 0,
  precedence: 'default',
  hostId: '',
  tags: {},
  createdAt: at(),
  updatedAt: at(),
  ...o,
});

const duplicate = (field: string, store: string, value: string) => ({
  code: 'COULD_NOT_VALIDATE',
  cause: { field, reason: `duplicate value '${value}' in unique index on ${store} store`, value },
});

describe.each(storeTargets)('inventory stores on %s', (target) => {
  let b: Awaited<ReturnType<typeof inventoryDatabase>> | undefined;
  let empty: () => Promise<void>;
  beforeAll(async () => {
    b = await inventoryDatabase(target);
    empty = await emptier(b.database);
  });
  afterEach(async () => empty?.());
  afterAll(async () => b?.drop());

  const bed = async () => b!;

  it('config types: insert, get (also locked in a transaction), by name and many, update, unique name, delete unless used', async () => {
    const { work } = await bed();
    const t1 = configType('t1', { schema: { type: 'object', required: ['port'] }, tags: { k: ['v', 1] } });
    await work(async (s) => {
      await s.configTypes.insert(t1);
      await s.configTypes.insert(configType('t2'));
    });
    expect(await work((s) => s.configTypes.get('t1'))).toEqual(t1);
    expect(await work((s) => s.configTypes.get('t1', { forUpdate: true }))).toEqual(t1);
    expect(await work((s) => s.configTypes.get('nope', { forUpdate: true }))).toBeNull();
    expect(await work((s) => s.configTypes.findByName('type-t2'))).toMatchObject({ id: 't2' });
    expect(await work((s) => s.configTypes.findByName('TYPE-T2'))).toBeNull();
    expect((await work((s) => s.configTypes.getMany(['t2', 'nope', 't1']))).map((t) => t.id).sort()).toEqual([
      't1',
      't2',
    ]);
    expect(await work((s) => s.configTypes.getMany([]))).toEqual([]);

    const changed = { ...t1, name: 'renamed', schema: {}, tags: {}, updatedAt: at(5) };
    await work((s) => s.configTypes.update(changed));
    expect(await work((s) => s.configTypes.get('t1'))).toEqual(changed);

    expect(await apiError(work((s) => s.configTypes.insert(configType('t3', { name: 'type-t2' }))))).toEqual(
      duplicate('name', 'configTypes', 'type-t2'),
    );
    expect(await apiError(work((s) => s.configTypes.update({ ...changed, name: 'type-t2' })))).toEqual(
      duplicate('name', 'configTypes', 'type-t2'),
    );
    // The failed write left nothing behind.
    expect(await work((s) => s.configTypes.get('t3'))).toBeNull();
    expect((await work((s) => s.configTypes.get('t1')))!.name).toBe('renamed');

    // A type a config uses is not deleted; its configs are listed bytewise.
    await work(async (s) => {
      for (const id of ['c-b', 'C-a', 'c-a']) await s.configs.insert(config(id, 't1'));
    });
    expect(await work((s) => s.configTypes.configIds('t1', 2))).toEqual(['C-a', 'c-a']);
    expect(await apiError(work((s) => s.configTypes.delete('t1')))).toEqual({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      cause: { field: 'type', reason: 'entity type configTypes referenced by configs', value: 't1' },
    });
    expect(await work((s) => s.configTypes.delete('t2'))).toBe(true);
    expect(await work((s) => s.configTypes.delete('t2'))).toBe(false);
    expect(await work((s) => s.configTypes.get('t2'))).toBeNull();
  });

  it('config types and configs list with a ZitiQL filter, bytewise sort and pages with their total', async () => {
    const { work } = await bed();
    await work(async (s) => {
      await s.configTypes.insert(configType('ta', { name: 'Alpha', tags: { team: 'x' } }));
      await s.configTypes.insert(configType('tb', { name: 'beta', tags: { team: 'x' } }));
      await s.configTypes.insert(configType('tc', { name: 'Gamma', tags: { team: 'y' } }));
      for (const [i, name] of ['b-1', 'B-2', 'a-3', 'A-4', 'c-5'].entries())
        await s.configs.insert(
          config(`c${i}`, i % 2 === 0 ? 'ta' : 'tb', { name, data: { port: i * 10 }, createdAt: at(i) }),
        );
    });
    const types = (filter: string) =>
      work((s) => s.configTypes.list({ filter })).then((p) => ({ ids: p.items.map((t) => t.id), total: p.totalCount }));
    // Bytewise: upper case before lower case, whatever the database's collation.
    expect(await types('true sort by name')).toEqual({ ids: ['ta', 'tc', 'tb'], total: 3 });
    expect(await types('tags.team = "x" sort by name desc')).toEqual({ ids: ['tb', 'ta'], total: 2 });
    expect(await types('name contains "a" sort by name')).toEqual({ ids: ['ta', 'tc', 'tb'], total: 3 });
    expect(await types('name icontains "ALPHA"')).toEqual({ ids: ['ta'], total: 1 });
    expect(await types('name > "Zed" sort by name')).toEqual({ ids: ['tb'], total: 1 });

    const configs = (input: { filter?: string; sort?: string; limit?: number; offset?: number }) =>
      work((s) => s.configs.list(input)).then((p) => ({
        names: p.items.map((c) => c.name),
        total: p.totalCount,
        pagination: p.pagination,
      }));
    expect(await configs({ sort: 'name' })).toEqual({
      names: ['A-4', 'B-2', 'a-3', 'b-1', 'c-5'],
      total: 5,
      pagination: { limit: 10, offset: 0 },
    });
    expect(await configs({ sort: 'name', limit: 2 })).toMatchObject({ names: ['A-4', 'B-2'], total: 5 });
    expect(await configs({ sort: 'name', limit: 2, offset: 2 })).toEqual({
      names: ['a-3', 'b-1'],
      total: 5,
      pagination: { limit: 2, offset: 2 },
    });
    expect(await configs({ sort: 'name', limit: 2, offset: 6 })).toMatchObject({ names: [], total: 5 });
    // limit/skip in the filter win over the parameters.
    expect(await configs({ filter: 'true sort by createdAt desc skip 1 limit 2', limit: 4 })).toMatchObject({
      names: ['A-4', 'a-3'],
      total: 5,
    });
    expect(await configs({ filter: 'type.name = "Alpha" sort by name' })).toMatchObject({
      names: ['a-3', 'b-1', 'c-5'],
      total: 3,
    });
    expect(await configs({ filter: 'type = "ta" sort by name' })).toMatchObject({
      names: ['a-3', 'b-1', 'c-5'],
      total: 3,
    });
    expect(await apiError(work((s) => s.configs.list({ filter: 'data.port >= 20' })))).toMatchObject({
      code: 'INVALID_FILTER',
    });
    expect(await configs({ filter: 'name in ["a-3", "A-4"] sort by name desc' })).toMatchObject({
      names: ['a-3', 'A-4'],
      total: 2,
    });
    const page = await work((s) => s.configs.list({ filter: 'name = "c-5"' }));
    expect(page.items).toEqual([config('c4', 'ta', { name: 'c-5', data: { port: 40 }, createdAt: at(4) })]);
    expect(page.filterableFields).toEqual(expect.arrayContaining(['name', 'type', 'type.name', 'services']));
    expect(page.filterableFields).not.toContain('data');
    const badFilter = await apiError(work((s) => s.configs.list({ filter: 'nope = 1' })));
    expect(badFilter.code).toBe('INVALID_FILTER');
  });

  it('configs: get (also locked), update keeps the type, scopes by type and service, pages by type, delete refused while an override uses it', async () => {
    const { work } = await bed();
    await work(async (s) => {
      await s.configTypes.insert(configType('t1'));
      await s.configTypes.insert(configType('t2'));
      await s.configs.insert(config('k1', 't1', { data: { a: { b: [1, 'x', null] } }, tags: { t: true } }));
      await s.configs.insert(config('k2', 't2'));
      await s.configs.insert(config('K3', 't1'));
      await s.services.insert(service('s1', { configs: ['k2', 'k1'] }));
      await s.services.insert(service('s2', { configs: ['k1'] }));
    });
    const k1 = await work((s) => s.configs.get('k1', { forUpdate: true }));
    expect(k1).toEqual(config('k1', 't1', { data: { a: { b: [1, 'x', null] } }, tags: { t: true } }));
    expect((await work((s) => s.configs.getMany(['k2', 'k1', 'x']))).map((c) => c.id).sort()).toEqual(['k1', 'k2']);
    // An update writes name, data and tags; the type stays.
    await work((s) =>
      s.configs.update({ ...k1!, name: 'k1-new', configTypeId: 't2', data: { n: 1 }, tags: {}, updatedAt: at(9) }),
    );
    expect(await work((s) => s.configs.get('k1'))).toEqual(
      config('k1', 't1', { name: 'k1-new', data: { n: 1 }, updatedAt: at(9) }),
    );
    expect(await apiError(work((s) => s.configs.insert(config('k4', 't1', { name: 'k1-new' }))))).toEqual(
      duplicate('name', 'configs', 'k1-new'),
    );
    expect(await apiError(work((s) => s.configs.update({ ...k1!, id: 'k2', name: 'config-K3' })))).toEqual(
      duplicate('name', 'configs', 'config-K3'),
    );

    const ids = (p: Promise<{ items: Config[]; totalCount: number }>) =>
      p.then((x) => ({ ids: x.items.map((c) => c.id), total: x.totalCount }));
    expect(await ids(work((s) => s.configs.list({ sort: 'id' }, { configTypeId: 't1' })))).toEqual({
      ids: ['K3', 'k1'],
      total: 2,
    });
    expect(await ids(work((s) => s.configs.list({ sort: 'id' }, { serviceId: 's1' })))).toEqual({
      ids: ['k1', 'k2'],
      total: 2,
    });
    expect(await ids(work((s) => s.configs.list({}, { configTypeId: 't1', serviceId: 's1' })))).toEqual({
      ids: ['k1'],
      total: 1,
    });
    expect(await ids(work((s) => s.configs.list({ filter: 'anyOf(services) = "s2"' })))).toEqual({
      ids: ['k1'],
      total: 1,
    });
    expect(await ids(work((s) => s.configs.list({}, { serviceId: 'none' })))).toEqual({ ids: [], total: 0 });

    expect((await work((s) => s.configs.listByType('t1', undefined, 1))).map((c) => c.id)).toEqual(['K3']);
    expect((await work((s) => s.configs.listByType('t1', 'K3', 5))).map((c) => c.id)).toEqual(['k1']);
    expect(await work((s) => s.configs.listByType('t1', 'k1', 5))).toEqual([]);

    await work((s) =>
      s.identityServiceConfigs.upsert({ identityId: 'i1', serviceId: 's1', configId: 'k2', configTypeId: 't2' }),
    );
    expect(await apiError(work((s) => s.configs.delete('k2')))).toEqual({
      code: 'CAN_NOT_DELETE_REFERENCED_ENTITY',
      cause: { field: 'configs', reason: 'config k2 is in use by identity service configs', value: 'k2' },
    });
    // A config a service lists goes, and leaves the service's list.
    expect(await work((s) => s.configs.delete('k1'))).toBe(true);
    expect(await work((s) => s.configs.delete('k1'))).toBe(false);
    expect((await work((s) => s.services.get('s1')))!.configs).toEqual(['k2']);
    expect(await work((s) => s.services.idsUsingConfig('k1'))).toEqual([]);
  });

  it('services: configs in order, encryptionRequired, role filters and config scope, unique name, delete takes terminators and overrides', async () => {
    const { work } = await bed();
    await work(async (s) => {
      await s.configTypes.insert(configType('t1'));
      for (const id of ['c1', 'c2', 'c3']) await s.configs.insert(config(id, 't1'));
      await s.services.insert(
        service('s1', {
          roleAttributes: ['web', 'eu'],
          configs: ['c3', 'c1'],
          maxIdleTimeMillis: 2 ** 40,
          tags: { n: 1 },
        }),
      );
      await s.services.insert(service('s2', { roleAttributes: ['web'], configs: ['c1'], encryptionRequired: false }));
      await s.services.insert(service('S3', { roleAttributes: ['db', 'eu'] }));
      await s.services.insert(service('s4'));
    });
    const s1 = await work((s) => s.services.get('s1', { forUpdate: true }));
    expect(s1).toEqual(
      service('s1', {
        roleAttributes: ['web', 'eu'],
        configs: ['c3', 'c1'],
        maxIdleTimeMillis: 2 ** 40,
        tags: { n: 1 },
      }),
    );
    expect((await work((s) => s.services.get('s2')))!.encryptionRequired).toBe(false);
    expect((await work((s) => s.services.getMany(['s2', 'x', 'S3', 's1']))).map((x) => x.id)).toEqual([
      'S3',
      's1',
      's2',
    ]);
    // An update rewrites the configs in their new order, and encryptionRequired as given.
    await work((s) =>
      s.services.update({
        ...s1!,
        name: 'renamed',
        roleAttributes: ['db'],
        configs: ['c2', 'c3'],
        encryptionRequired: false,
        updatedAt: at(3),
      }),
    );
    expect(await work((s) => s.services.get('s1'))).toMatchObject({
      name: 'renamed',
      roleAttributes: ['db'],
      configs: ['c2', 'c3'],
      encryptionRequired: false,
      updatedAt: at(3),
      createdAt: at(),
    });
    expect((await work((s) => s.services.idsUsingConfig('c1'))).sort()).toEqual(['s2']);
    expect(await apiError(work((s) => s.services.insert(service('s5', { name: 'renamed' }))))).toEqual(
      duplicate('name', 'services', 'renamed'),
    );
    expect(await work((s) => s.services.get('s5'))).toBeNull();
    expect(await apiError(work((s) => s.services.update({ ...s1!, id: 's2', name: 'service-S3' })))).toEqual(
      duplicate('name', 'services', 'service-S3'),
    );

    const list = (roles: string[], semantic: 'AllOf' | 'AnyOf', filter = 'true sort by id') =>
      work((s) => s.services.list({ filter }, { roleFilter: { roles, semantic } })).then((p) => ({
        ids: p.items.map((x) => x.id),
        total: p.totalCount,
      }));
    expect(await list(['#eu', '#web'], 'AnyOf')).toEqual({ ids: ['S3', 's2'], total: 2 });
    expect(await list(['#db', '#eu'], 'AllOf')).toEqual({ ids: ['S3'], total: 1 });
    expect(await list(['#db', '@s4'], 'AllOf')).toEqual({ ids: ['S3', 's1', 's4'], total: 3 });
    expect(await list(['#db'], 'AnyOf', 'name contains "renamed"')).toEqual({ ids: ['s1'], total: 1 });
    expect(await list([], 'AnyOf')).toEqual({ ids: ['S3', 's1', 's2', 's4'], total: 4 });
    expect(
      (await apiError(work((s) => s.services.list({}, { roleFilter: { roles: ['db'], semantic: 'AnyOf' } })))).cause,
    ).toMatchObject({ field: 'roleFilter' });
    expect((await work((s) => s.services.list({ sort: 'id' }, { configId: 'c3' }))).items.map((x) => x.id)).toEqual([
      's1',
    ]);
    const filtered = await work((s) =>
      s.services.list({ filter: 'anyOf(roleAttributes) = "eu" or anyOf(configs) = "c1"', sort: 'name desc', limit: 1 }),
    );
    expect({ ids: filtered.items.map((x) => x.id), total: filtered.totalCount }).toEqual({ ids: ['s2'], total: 2 });

    // Deleting a service takes its terminators and identity overrides with it.
    await work(async (s) => {
      await s.routers.insert(router('r1', 'edge'));
      await s.terminators.insert(terminator('x1', 's2', 'r1'));
      await s.identityServiceConfigs.upsert({ identityId: 'i1', serviceId: 's2', configId: 'c1', configTypeId: 't1' });
    });
    expect(await work((s) => s.services.delete('s2'))).toBe(true);
    expect(await work((s) => s.services.delete('s2'))).toBe(false);
    expect(await work((s) => s.terminators.get('x1'))).toBeNull();
    expect(await work((s) => s.identityServiceConfigs.listByIdentity('i1'))).toEqual([]);
    expect(await work((s) => s.services.idsUsingConfig('c1'))).toEqual([]);
  });

  it('routers: edge and transit share a name index, fingerprints are unique (CERT_IN_USE), the kind narrows get, update, lists and pages', async () => {
    const { work } = await bed();
    const e1 = router('e1', 'edge', {
      roleAttributes: ['pub'],
      fingerprint: 'fp-1',
      certPem: 'PEM',
      isVerified: true,
      isTunnelerEnabled: true,
      cost: 65535,
      hostname: 'e1.example',
      supportedProtocols: { tls: 'tls://e1.example:3022' },
      appData: { nested: { x: [1] } },
      versionInfo: { version: 'v1.2.3', os: 'linux' },
      tags: { k: 'v' },
    });
    await work(async (s) => {
      await s.routers.insert(e1);
      await s.routers.insert(router('e2', 'edge', { roleAttributes: ['pub', 'eu'], cost: 5 }));
      await s.routers.insert(router('t1', 'transit', { fingerprint: 'fp-t', cost: 7 }));
    });
    expect(await work((s) => s.routers.get('e1'))).toEqual(e1);
    expect(await work((s) => s.routers.get('e1', 'edge', { forUpdate: true }))).toEqual(e1);
    expect(await work((s) => s.routers.get('e1', 'transit'))).toBeNull();
    expect(await work((s) => s.routers.get('t1', 'transit'))).toMatchObject({ kind: 'transit', versionInfo: null });
    expect((await work((s) => s.routers.findByFingerprint('fp-1')))!.id).toBe('e1');
    expect(await work((s) => s.routers.findByFingerprint('fp-none'))).toBeNull();
    expect((await work((s) => s.routers.names(['t1', 'e2', 'x']))).sort((a, b) => bytewise(a.id, b.id))).toEqual([
      { id: 'e2', name: 'router-e2' },
      { id: 't1', name: 'router-t1' },
    ]);

    // One name index for both kinds; the store named in the error is the writer's kind.
    expect(await apiError(work((s) => s.routers.insert(router('t2', 'transit', { name: 'router-e1' }))))).toEqual(
      duplicate('name', 'routers', 'router-e1'),
    );
    expect(await apiError(work((s) => s.routers.insert(router('e3', 'edge', { name: 'router-t1' }))))).toEqual(
      duplicate('name', 'edgeRouters', 'router-t1'),
    );
    const certInUse = {
      code: 'CERT_IN_USE',
      cause: { message: 'the certificate is already in use', data: { fingerprint: 'fp-t' } },
    };
    expect(await apiError(work((s) => s.routers.insert(router('e3', 'edge', { fingerprint: 'fp-t' }))))).toEqual(
      certInUse,
    );
    expect(await apiError(work((s) => s.routers.update({ ...e1, fingerprint: 'fp-t' })))).toEqual(certInUse);
    // Many routers may have no fingerprint; the cost is bounded by the table.
    await work((s) => s.routers.insert(router('e4', 'edge')));
    expect(pgErrorOf(await rejection(work((s) => s.routers.insert(router('e5', 'edge', { cost: 65536 })))))?.code).toBe(
      '23514',
    );

    // An update of the wrong kind changes nothing.
    await work((s) => s.routers.update({ ...e1, kind: 'transit', name: 'nope' }));
    expect((await work((s) => s.routers.get('e1')))!.name).toBe('router-e1');
    const updated = {
      ...e1,
      name: 'e1-new',
      versionInfo: null,
      fingerprint: null,
      roleAttributes: [],
      updatedAt: at(1),
    };
    await work((s) => s.routers.update(updated));
    expect(await work((s) => s.routers.get('e1'))).toEqual(updated);

    const list = (kind: RouterKind | undefined, filter: string, roles?: string[]) =>
      work((s) => s.routers.list(kind, { filter }, roles ? { roles, semantic: 'AnyOf' } : undefined)).then((p) => ({
        ids: p.items.map((r) => r.id),
        total: p.totalCount,
      }));
    expect(await list('edge', 'true sort by id')).toEqual({ ids: ['e1', 'e2', 'e4'], total: 3 });
    expect(await list('transit', 'true')).toEqual({ ids: ['t1'], total: 1 });
    expect(await list(undefined, 'cost > 0 sort by cost desc')).toEqual({ ids: ['e1', 't1', 'e2'], total: 3 });
    expect(await list('edge', 'anyOf(roleAttributes) = "eu"')).toEqual({ ids: ['e2'], total: 1 });
    expect(await list('edge', 'true sort by id', ['#pub', '@e4'])).toEqual({ ids: ['e2', 'e4'], total: 2 });
    // Transit routers have no role attributes: a role filter does not apply to them.
    expect(await list('transit', 'true', ['#pub'])).toEqual({ ids: ['t1'], total: 1 });
    expect(
      (await apiError(work((s) => s.routers.list('transit', { filter: 'anyOf(roleAttributes) = "x"' })))).code,
    ).toBe('INVALID_FILTER');

    expect(await work((s) => s.routers.delete('t1'))).toBe(true);
    expect(await work((s) => s.routers.delete('t1'))).toBe(false);
    expect(await work((s) => s.routers.findByFingerprint('fp-t'))).toBeNull();
  });

  it('terminators: reference a service and a router, list by service with related names, update, delete, go with their router', async () => {
    const { work } = await bed();
    await work(async (s) => {
      await s.services.insert(service('s1'));
      await s.services.insert(service('s2'));
      await s.routers.insert(router('e1', 'edge'));
      await s.routers.insert(router('t1', 'transit'));
    });
    const x1 = terminator('x1', 's1', 'e1', {
      binding: 'transport',
      address: 'tcp:10.0.0.1:80',
      instanceId: 'inst',
      instanceSecretHash: 'hash',
      cost: 10,
      precedence: 'required',
      hostId: 'h1',
      tags: { a: 1 },
    });
    await work(async (s) => {
      await s.terminators.insert(x1);
      await s.terminators.insert(terminator('x2', 's1', 't1', { cost: 5 }));
      await s.terminators.insert(terminator('x3', 's2', 'e1', { cost: 20, precedence: 'failed' }));
    });
    expect(await work((s) => s.terminators.get('x1'))).toEqual(x1);
    expect(await work((s) => s.terminators.get('x1', { forUpdate: true }))).toEqual(x1);
    expect(pgErrorOf(await rejection(work((s) => s.terminators.insert(terminator('x9', 'nope', 'e1')))))?.code).toBe(
      '23503',
    );

    const list = (filter: string, serviceId?: string) =>
      work((s) => s.terminators.list({ filter }, serviceId)).then((p) => ({
        ids: p.items.map((t) => t.id),
        total: p.totalCount,
      }));
    expect(await list('true sort by cost desc')).toEqual({ ids: ['x3', 'x1', 'x2'], total: 3 });
    expect(await list('true sort by cost', 's1')).toEqual({ ids: ['x2', 'x1'], total: 2 });
    expect(await list('router.name = "router-e1" sort by id')).toEqual({ ids: ['x1', 'x3'], total: 2 });
    expect(await list('service.name = "service-s2"')).toEqual({ ids: ['x3'], total: 1 });
    expect(await list('precedence = "required" and binding = "transport" and hostId = "h1"')).toEqual({
      ids: ['x1'],
      total: 1,
    });
    expect(await list('true sort by id skip 1 limit 1', 's1')).toEqual({ ids: ['x2'], total: 2 });

    // An update moves it (service, router, address, cost, precedence, tags); instance and secret stay.
    await work((s) =>
      s.terminators.update({
        ...x1,
        serviceId: 's2',
        routerId: 't1',
        address: 'tcp:10.0.0.2:80',
        instanceId: 'other',
        instanceSecretHash: null,
        cost: 1,
        precedence: 'default',
        tags: {},
        updatedAt: at(2),
      }),
    );
    expect(await work((s) => s.terminators.get('x1'))).toEqual({
      ...x1,
      serviceId: 's2',
      routerId: 't1',
      address: 'tcp:10.0.0.2:80',
      cost: 1,
      precedence: 'default',
      tags: {},
      updatedAt: at(2),
    });
    expect(await work((s) => s.terminators.delete('x2'))).toBe(true);
    expect(await work((s) => s.terminators.delete('x2'))).toBe(false);
    // They go with their router.
    await work((s) => s.routers.delete('e1'));
    expect(await list('true')).toEqual({ ids: ['x1'], total: 1 });
  });

  it('identity service configs: one per type, by identity and service, counts, deletes, pages of identities', async () => {
    const { work } = await bed();
    await work(async (s) => {
      await s.configTypes.insert(configType('t1'));
      await s.configTypes.insert(configType('t2'));
      for (const [id, type] of [
        ['c1', 't1'],
        ['c2', 't1'],
        ['c3', 't2'],
      ] as const)
        await s.configs.insert(config(id, type));
      await s.services.insert(service('s1'));
      await s.services.insert(service('S2'));
    });
    const link = (identityId: string, serviceId: string, configId: string, configTypeId: string) => ({
      identityId,
      serviceId,
      configId,
      configTypeId,
    });
    await work(async (s) => {
      await s.identityServiceConfigs.upsert(link('i1', 's1', 'c1', 't1'));
      // Same identity, service and type: replaces c1.
      await s.identityServiceConfigs.upsert(link('i1', 's1', 'c2', 't1'));
      await s.identityServiceConfigs.upsert(link('i1', 's1', 'c3', 't2'));
      await s.identityServiceConfigs.upsert(link('i1', 'S2', 'c2', 't1'));
      await s.identityServiceConfigs.upsert(link('I0', 's1', 'c2', 't1'));
      await s.identityServiceConfigs.upsert(link('i2', 's1', 'c3', 't2'));
    });
    expect(await work((s) => s.identityServiceConfigs.listByIdentity('i1'))).toEqual([
      link('i1', 'S2', 'c2', 't1'),
      link('i1', 's1', 'c2', 't1'),
      link('i1', 's1', 'c3', 't2'),
    ]);
    expect(await work((s) => s.identityServiceConfigs.listByIdentities(['i2', 'I0', 'none']))).toEqual([
      link('I0', 's1', 'c2', 't1'),
      link('i2', 's1', 'c3', 't2'),
    ]);
    expect(await work((s) => s.identityServiceConfigs.listByIdentities([]))).toEqual([]);
    expect(await work((s) => s.identityServiceConfigs.identityIdsByService('s1'))).toEqual(['I0', 'i1', 'i2']);
    expect(await work((s) => s.identityServiceConfigs.countByConfig('c2'))).toBe(3);
    expect(await work((s) => s.identityServiceConfigs.countByConfig('c1'))).toBe(0);
    // Bytewise pages of the identities with overrides, or the given ones.
    expect(await work((s) => s.identityServiceConfigs.identityIds(undefined, 2))).toEqual(['I0', 'i1']);
    expect(await work((s) => s.identityServiceConfigs.identityIds('i1', 2))).toEqual(['i2']);
    expect(await work((s) => s.identityServiceConfigs.identityIds(undefined, 10, ['i2', 'none', 'I0']))).toEqual([
      'I0',
      'i2',
    ]);
    // An override must name an existing config and service.
    expect(
      pgErrorOf(await rejection(work((s) => s.identityServiceConfigs.upsert(link('i3', 's1', 'nope', 't1')))))?.code,
    ).toBe('23503');

    expect(await work((s) => s.identityServiceConfigs.delete('i1', 's1', 'c1'))).toBe(0);
    expect(await work((s) => s.identityServiceConfigs.delete('i1', 's1', 'c2'))).toBe(1);
    expect(await work((s) => s.identityServiceConfigs.deleteByIdentity('i1'))).toBe(2);
    expect(await work((s) => s.identityServiceConfigs.deleteByIdentity('i1'))).toBe(0);
    expect(await work((s) => s.identityServiceConfigs.identityIds(undefined, 10))).toEqual(['I0', 'i2']);
  });

  it('owner state pages: bytewise id order after a cursor, a limit, or the given ids', async () => {
    const { work } = await bed();
    // Ids whose bytewise order differs from a locale's (upper case first, '-' and '_' by code point).
    const ids = ['b', 'B', 'a_1', 'a-1', 'A', 'ä', 'z'];
    const sorted = [...ids].sort(bytewise);
    await work(async (s) => {
      for (const id of ids) {
        await s.configTypes.insert(configType(id));
        await s.configs.insert(config(id, id));
        await s.services.insert(service(id, { configs: [id] }));
        await s.routers.insert(router(`e${id}`, 'edge'));
        await s.routers.insert(router(`t${id}`, 'transit'));
      }
    });
    type Pager = (after: string | undefined, limit: number, ids?: string[]) => Promise<{ id: string }[]>;
    const pagers: Record<string, [(s: InventoryStores) => Pager, string[]]> = {
      configTypes: [(s) => (a, l, i) => s.configTypes.page(a, l, i), sorted],
      configs: [(s) => (a, l, i) => s.configs.page(a, l, i), sorted],
      services: [(s) => (a, l, i) => s.services.page(a, l, i), sorted],
      edgeRouters: [(s) => (a, l, i) => s.routers.page('edge', a, l, i), sorted.map((id) => `e${id}`)],
      transitRouters: [(s) => (a, l, i) => s.routers.page('transit', a, l, i), sorted.map((id) => `t${id}`)],
    };
    for (const [name, [pager, expected]] of Object.entries(pagers)) {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await work((s) => pager(s)(after, 3));
        seen.push(...page.map((x) => x.id));
        if (page.length < 3) break;
        after = page.at(-1)!.id;
      }
      expect(seen, name).toEqual(expected);
      const picked = [expected[4]!, 'none', expected[0]!, expected[2]!];
      expect(
        (await work((s) => pager(s)(undefined, 500, picked))).map((x) => x.id),
        name,
      ).toEqual([expected[0]!, expected[2]!, expected[4]!]);
    }
    // A page carries the whole entity (a service with its configs), as the events do.
    expect(await work((s) => s.services.page(undefined, 1, ['ä']))).toEqual([service('ä', { configs: ['ä'] })]);
    expect(await work((s) => s.routers.page('transit', undefined, 5, ['eA']))).toEqual([]);
  });

  it('a read-modify-write under forUpdate waits for the transaction holding the row: both changes survive', async () => {
    const { work, database } = await bed();
    await work(async (s) => {
      await s.configTypes.insert(configType('t1'));
      await s.configs.insert(config('c1', 't1'));
      await s.services.insert(service('s1'));
      await s.routers.insert(router('r1', 'edge'));
      await s.terminators.insert(terminator('x1', 's1', 'r1'));
    });
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.configTypes.get('t1', lock),
      (s, t) => s.configTypes.update({ ...t, tags: counter(t.tags) }),
    );
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.configs.get('c1', lock),
      (s, c) => s.configs.update({ ...c, tags: counter(c.tags) }),
    );
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.services.get('s1', lock),
      (s, x) => s.services.update({ ...x, tags: counter(x.tags) }),
    );
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.routers.get('r1', 'edge', lock),
      (s, r) => s.routers.update({ ...r, tags: counter(r.tags) }),
    );
    await lockedReadModifyWrites(
      work,
      database,
      (s, lock) => s.terminators.get('x1', lock),
      (s, t) => s.terminators.update({ ...t, tags: counter(t.tags) }),
    );
    const n = await work(async (s) => [
      (await s.configTypes.get('t1'))!.tags.n,
      (await s.configs.get('c1'))!.tags.n,
      (await s.services.get('s1'))!.tags.n,
      (await s.routers.get('r1'))!.tags.n,
      (await s.terminators.get('x1'))!.tags.n,
    ]);
    expect(n).toEqual([2, 2, 2, 2, 2]);
  });

  it('seeds are claimed once; the integrity job runs under one lease at a time; a rate limit takes one slot per interval', async () => {
    const { work, database } = await bed();
    expect(await work((s) => s.seeds.claim('builtins'))).toBe(true);
    expect(await work((s) => s.seeds.claim('builtins'))).toBe(false);
    expect(await work((s) => s.seeds.claim('other'))).toBe(true);

    const jobs: IntegrityJobStore = new PgIntegrityJobStore(database.db);
    expect(await jobs.read()).toMatchObject({ inProgress: false, startTime: null, results: [], leaseExpired: false });
    expect(await jobs.tryStart('a', true, 60_000)).toBe(true);
    expect(await jobs.tryStart('b', false, 60_000)).toBe(false);
    expect(await jobs.renew('a', 60_000)).toBe(true);
    expect(await jobs.renew('b', 60_000)).toBe(false);
    expect(await jobs.read()).toMatchObject({
      inProgress: true,
      fixingErrors: true,
      endTime: null,
      leaseExpired: false,
    });
    // Only the owner finishes it.
    await jobs.finish('b', { results: [], tooManyErrors: true, error: 'no' });
    expect((await jobs.read()).inProgress).toBe(true);
    const results = [{ description: 'x is broken', fixed: true }];
    await jobs.finish('a', { results, tooManyErrors: false, error: null });
    const done = await jobs.read();
    expect(done).toMatchObject({ inProgress: false, fixingErrors: true, tooManyErrors: false, error: null, results });
    expect(done.startTime!.getTime()).toBeLessThanOrEqual(done.endTime!.getTime());
    expect(await jobs.renew('a', 60_000)).toBe(false);
    // A lease that runs out (its replica died) lets another start.
    expect(await jobs.tryStart('a', false, 1)).toBe(true);
    await waitFor(async () => (await jobs.read()).leaseExpired, 'the lease to run out', 5_000, 5);
    expect(await jobs.tryStart('b', false, 60_000)).toBe(true);
    expect(await jobs.renew('a', 60_000)).toBe(false);
    expect(await jobs.read()).toMatchObject({ inProgress: true, fixingErrors: false, results: [] });

    const limits: RateLimitStore = new PgRateLimitStore(database.db);
    expect(await limits.tryTake('snapshot', 60_000)).toBe(true);
    expect(await limits.tryTake('snapshot', 60_000)).toBe(false);
    expect(await limits.tryTake('other', 60_000)).toBe(true);
    await waitFor(() => limits.tryTake('snapshot', 1), 'the slot after its interval', 5_000, 5);
  });
});
