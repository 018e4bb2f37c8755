import { ApiError } from '@ziti/contracts';
import type { Database } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../test/support/infra.ts';
import { AjvSchemaValidator } from '../src/config-types/ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from '../src/config-types/config-types.domain.ts';
import { ConfigService } from '../src/configs/configs.domain.ts';
import { IdentityServiceConfigService } from '../src/identity-service-configs/identity-service-configs.domain.ts';
import { checkInventoryIntegrity } from '../src/maintenance/inventory-integrity.domain.ts';
import { RouterService } from '../src/routers/routers.domain.ts';
import type { RouterEnrollments } from '../src/routers/routers.ports.ts';
import { ServiceCatalog } from '../src/services/services.domain.ts';
import type { UnitOfWork } from '../src/shared/stores.ports.ts';
import { TerminatorService, hashIdentitySecret } from '../src/terminators/terminators.domain.ts';
import { FakeIdentityDirectory, inventoryDatabase, outboxEvents } from './support.ts';

/** The inventory domain on its real Postgres stores: rules, references, events. */
let database: Database;
let work: UnitOfWork;
let drop: () => Promise<void>;
const schemas = new AjvSchemaValidator();

beforeAll(async () => {
  ({ database, work, drop } = await inventoryDatabase('postgres'));
});
afterAll(async () => {
  await drop?.();
});

async function apiError(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

describe('config types and configs', () => {
  it('seeds the built-in types once, even if one is deleted later', async () => {
    const types = new ConfigTypeService(work, schemas);
    expect(await types.seedBuiltins()).toBe(true);
    expect((await types.get('g7cIWbcGg')).name).toBe('intercept.v1');
    await types.delete('host.v2');
    expect(await types.seedBuiltins()).toBe(false);
    expect((await apiError(types.get('host.v2'))).code).toBe('NOT_FOUND');
  });

  it('refuses the keyword `all`, invalid schemas and non-object roots; names are unique', async () => {
    const types = new ConfigTypeService(work, schemas);
    expect((await apiError(types.create({ name: 'all' }))).cause).toMatchObject({ field: 'name' });
    expect(
      (await apiError(types.create({ name: uniqueName('t'), schema: { type: 'object', required: 7 } }))).cause,
    ).toMatchObject({ field: 'schema' });
    expect((await apiError(types.create({ name: uniqueName('t'), schema: { type: 'array' } }))).cause).toMatchObject({
      field: 'schema',
      reason: 'invalid config type schema, root type must be object',
    });
    const name = uniqueName('t');
    await types.create({ name });
    const dup = await apiError(types.create({ name }));
    expect(dup.code).toBe('COULD_NOT_VALIDATE');
    expect(dup.cause).toMatchObject({
      field: 'name',
      reason: `duplicate value '${name}' in unique index on configTypes store`,
    });
  });

  it('validates config data against the type (by id or name) and keeps the type fixed', async () => {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const type = await types.create({
      name: uniqueName('t'),
      schema: { type: 'object', required: ['port'], properties: { port: { type: 'integer' } } },
    });
    const bad = await apiError(configs.create({ name: uniqueName('c'), configTypeId: type.id, data: { port: 'x' } }));
    expect(bad.code).toBe('COULD_NOT_VALIDATE');
    expect(bad.cause).toMatchObject({ field: 'port', value: 'x' });
    expect(
      (await apiError(configs.create({ name: uniqueName('c'), configTypeId: 'nope', data: {} }))).cause,
    ).toMatchObject({ field: 'type', reason: 'invalid config type', value: 'nope' });
    // A type's name is not its id (the reference refuses it the same way).
    expect(
      (await apiError(configs.create({ name: uniqueName('c'), configTypeId: type.name, data: { port: 1 } }))).cause,
    ).toMatchObject({ field: 'type', value: type.name });
    const byName = await configs.create({ name: uniqueName('c'), configTypeId: type.id, data: { port: 1 } });
    expect(byName.configTypeId).toBe(type.id);
    await configs.update(byName.id, { data: { port: 2 } }, 'patch');
    expect((await configs.get(byName.id)).data).toEqual({ port: 2 });
    expect((await apiError(configs.update(byName.id, { name: byName.name, data: {} }, 'replace'))).cause).toMatchObject(
      { field: '(root)' },
    );
    // A type in use can not be deleted.
    const refused = await apiError(types.delete(type.id));
    expect(refused.code).toBe('CAN_NOT_DELETE_REFERENCED_ENTITY');
    expect(refused.cause).toMatchObject({ field: 'type', value: `[${byName.id}]` });
  });

  it('reports configs that no longer satisfy a changed schema', async () => {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const type = await types.create({ name: uniqueName('t'), schema: { type: 'object' } });
    const config = await configs.create({ name: uniqueName('c'), configTypeId: type.id, data: { a: 1 } });
    await types.update(type.id, { schema: { type: 'object', required: ['b'] } }, 'patch');
    const results = await checkInventoryIntegrity(work, schemas, new FakeIdentityDirectory(), false);
    expect(
      results.some(
        (r) => r.description.includes(config.id) && r.description.includes('(root): b is required') && !r.fixed,
      ),
    ).toBe(true);
  });
});

describe('services', () => {
  it('defaults, configs in order with one per type, encryptionRequired set by a PUT (absent: false), never by a PATCH, events with the full state', async () => {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const services = new ServiceCatalog(work);
    const t1 = await types.create({ name: uniqueName('t') });
    const t2 = await types.create({ name: uniqueName('t') });
    const c1 = await configs.create({ name: uniqueName('c'), configTypeId: t1.id, data: {} });
    const c2 = await configs.create({ name: uniqueName('c'), configTypeId: t2.id, data: {} });
    const c3 = await configs.create({ name: uniqueName('c'), configTypeId: t1.id, data: {} });
    const s = await services.create({
      name: uniqueName('s'),
      encryptionRequired: false,
      configs: [c2.id, c1.id],
      roleAttributes: ['b', 'a', 'b'],
    });
    expect(await services.get(s.id)).toMatchObject({
      terminatorStrategy: 'smartrouting',
      configs: [c2.id, c1.id],
      roleAttributes: ['a', 'b'],
      maxIdleTimeMillis: 0,
    });
    expect((await apiError(services.update(s.id, { configs: [c1.id, c3.id] }, 'patch'))).cause).toMatchObject({
      field: 'configs',
    });
    const missing = await apiError(services.update(s.id, { configs: ['nope'] }, 'patch'));
    expect(missing.code).toBe('NOT_FOUND');
    expect(
      (await apiError(services.create({ name: uniqueName('s'), terminatorStrategy: 'fastest' }))).cause,
    ).toMatchObject({ field: 'terminatorStrategy' });
    expect((await apiError(services.create({ name: uniqueName('s'), roleAttributes: ['#x'] }))).cause).toMatchObject({
      field: 'roleAttributes',
    });

    await services.update(s.id, { name: s.name, encryptionRequired: true, maxIdleTimeMillis: 5000 }, 'replace');
    expect((await services.get(s.id)).encryptionRequired).toBe(true);
    await services.update(s.id, { encryptionRequired: false }, 'patch');
    expect((await services.get(s.id)).encryptionRequired).toBe(true);
    await services.update(s.id, { name: s.name, maxIdleTimeMillis: 5000 }, 'replace');
    const replaced = await services.get(s.id);
    expect(replaced).toMatchObject({
      encryptionRequired: false,
      maxIdleTimeMillis: 5000,
      configs: [],
      roleAttributes: [],
      terminatorStrategy: 'smartrouting',
    });

    await services.update(s.id, { configs: [c1.id] }, 'patch');
    await configs.delete(c1.id); // the service loses it and says so
    expect((await services.get(s.id)).configs).toEqual([]);
    const events = (await outboxEvents(database)).filter((e) => e.payload.id === s.id);
    expect(events.map((e) => e.type)).toEqual([
      'service.created',
      'service.updated',
      'service.updated',
      'service.updated',
      'service.updated',
      'service.updated',
    ]);
    expect(events[0]!.payload).toMatchObject({
      name: s.name,
      encryptionRequired: false,
      configs: [c2.id, c1.id],
      roleAttributes: ['a', 'b'],
    });
    expect(events[5]!.payload.configs).toEqual([]);

    await services.delete(s.id);
    expect((await outboxEvents(database)).filter((e) => e.payload.id === s.id).at(-1)?.type).toBe('service.deleted');
  });

  it('lists with roleFilter (AllOf / AnyOf, unioned with @ids) under the filter', async () => {
    const services = new ServiceCatalog(work);
    const tag = uniqueName('r').replace(/[^a-z]/g, '');
    const a = await services.create({ name: uniqueName('s'), roleAttributes: [`${tag}x`, `${tag}y`] });
    const b = await services.create({ name: uniqueName('s'), roleAttributes: [`${tag}x`] });
    const c = await services.create({ name: uniqueName('s'), roleAttributes: [] });
    const ids = async (roles: string[], semantic: 'AllOf' | 'AnyOf') =>
      (await services.list({ limit: -1 }, { roleFilter: { roles, semantic } })).items.map((s) => s.id).sort();
    expect(await ids([`#${tag}x`, `#${tag}y`], 'AllOf')).toEqual([a.id]);
    expect(await ids([`#${tag}x`, `#${tag}y`], 'AnyOf')).toEqual([a.id, b.id].sort());
    expect(await ids([`#${tag}y`, `@${c.id}`], 'AllOf')).toEqual([a.id, c.id].sort());
    expect((await apiError(ids(['plain'], 'AllOf'))).cause).toMatchObject({ field: 'roleFilter' });
  });
});

describe('concurrent changes', () => {
  it('two PATCHes of different fields of one service, config or config type both survive (the row is locked)', async () => {
    // Each change reads the row, changes fields and writes it whole: without the lock, one of two
    // concurrent changes was lost in 19 of 20 rounds on Postgres.
    const services = new ServiceCatalog(work);
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    for (let i = 0; i < 10; i++) {
      const svc = await services.create({ name: uniqueName('lock-svc') });
      await Promise.all([
        services.update(svc.id, { roleAttributes: [`r${i}`] }, 'patch'),
        services.update(svc.id, { tags: { round: i } }, 'patch'),
      ]);
      expect(await services.get(svc.id)).toMatchObject({ roleAttributes: [`r${i}`], tags: { round: i } });

      const type = await types.create({ name: uniqueName('lock-type') });
      await Promise.all([
        types.update(type.id, { tags: { round: i } }, 'patch'),
        types.update(type.id, { name: `${type.name}-renamed` }, 'patch'),
      ]);
      expect(await types.get(type.id)).toMatchObject({ name: `${type.name}-renamed`, tags: { round: i } });

      const config = await configs.create({ name: uniqueName('lock-cfg'), configTypeId: type.id, data: { a: 1 } });
      await Promise.all([
        configs.update(config.id, { data: { a: 2 } }, 'patch'),
        configs.update(config.id, { tags: { round: i } }, 'patch'),
      ]);
      expect(await configs.get(config.id)).toMatchObject({ data: { a: 2 }, tags: { round: i } });
    }
  });
});

describe('routers and terminators', () => {
  const issued: string[] = [];
  const revoked: string[] = [];
  const enrollment = (routerId: string) => ({
    id: `e-${routerId}`,
    token: `t-${routerId}`,
    jwt: `jwt-${routerId}`,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 60_000),
  });
  const enrollments: RouterEnrollments = {
    issue: async (routerId) => {
      issued.push(routerId);
      return enrollment(routerId);
    },
    revoke: async (routerId) => {
      revoked.push(routerId);
    },
    pending: async (ids) => new Map(ids.filter((id) => issued.includes(id)).map((id) => [id, enrollment(id)])),
  };

  it('edge and transit routers share one name index; edge routers come with an enrollment and announce changes', async () => {
    const routers = new RouterService(work, enrollments);
    const name = uniqueName('er');
    const er = await routers.create('edge', { name, isTunnelerEnabled: true, roleAttributes: ['public'], cost: 7 });
    expect(issued).toContain(er.id);
    const created = await routers.get('edge', er.id);
    expect(created).toMatchObject({ isVerified: false, isTunnelerEnabled: true, cost: 7 });
    expect((await routers.pendingEnrollments([created])).get(er.id)).toMatchObject({ jwt: `jwt-${er.id}` });
    expect((await apiError(routers.create('transit', { name }))).cause).toMatchObject({ field: 'name' });
    expect((await apiError(routers.get('transit', er.id))).code).toBe('NOT_FOUND');
    expect((await apiError(routers.create('edge', { name: uniqueName('er'), cost: 70000 }))).cause).toMatchObject({
      field: 'cost',
    });

    await routers.update('edge', er.id, { name: `${name}-2` }, 'replace');
    expect(await routers.get('edge', er.id)).toMatchObject({
      name: `${name}-2`,
      isTunnelerEnabled: false,
      roleAttributes: [],
      cost: 0,
      appData: {},
    });

    // Enrolled with a certificate, extended, then back to awaiting enrollment.
    await routers.markEnrolled({ routerId: er.id, kind: 'edge', fingerprint: 'f1', certPem: 'pem1' });
    const again = routers.markEnrolled({ routerId: er.id, kind: 'edge', fingerprint: 'f2', certPem: 'p' });
    expect((await apiError(again)).code).toBe('CAN_NOT_UPDATE_ROUTER');
    expect(await routers.pendingEnrollments([await routers.get('edge', er.id)])).toEqual(new Map());
    expect((await routers.byFingerprint('f1'))?.id).toBe(er.id);
    await routers.changeCertificate({ routerId: er.id, previousFingerprint: 'f1', fingerprint: 'f2', certPem: 'pem2' });
    expect(await routers.byFingerprint('f1')).toBeNull();
    const stale = routers.changeCertificate({
      routerId: er.id,
      previousFingerprint: 'f1',
      fingerprint: 'f3',
      certPem: 'p',
    });
    expect((await apiError(stale)).code).toBe('UNAUTHORIZED');
    await routers.reEnroll(er.id);
    expect(await routers.get('edge', er.id)).toMatchObject({
      isVerified: false,
      fingerprint: null,
      certPem: null,
      name: `${name}-2`,
    });
    expect(issued.filter((id) => id === er.id)).toHaveLength(2);
    const events = (await outboxEvents(database)).filter((e) => e.payload.id === er.id);
    expect(events.map((e) => e.type)).toEqual([
      'edgeRouter.created',
      'edgeRouter.updated',
      'edgeRouter.updated',
      'edgeRouter.updated',
      'edgeRouter.updated',
    ]);
    expect(events.map((e) => [e.payload.isVerified, e.payload.fingerprint])).toEqual([
      [false, null],
      [false, null],
      [true, 'f1'],
      [true, 'f2'],
      [false, null],
    ]);

    const tr = await routers.create('transit', { name: uniqueName('tr'), noTraversal: true });
    expect(await routers.get('transit', tr.id)).toMatchObject({
      kind: 'transit',
      noTraversal: true,
      isTunnelerEnabled: false,
    });
    expect((await outboxEvents(database)).some((e) => e.payload.id === tr.id)).toBe(false);
    // Its enrollment (trott) is issued with it, as an edge router's is.
    expect(issued).toContain(tr.id);
  });

  it('terminators reference a service and any router, keep only a hash of the secret, and go with either', async () => {
    const routers = new RouterService(work, enrollments);
    const services = new ServiceCatalog(work);
    const terminators = new TerminatorService(work);
    const svc = await services.create({ name: uniqueName('s') });
    const router = await routers.create('transit', { name: uniqueName('tr') });
    expect(
      (
        await apiError(
          terminators.create({ service: 'nope', router: router.id, binding: 'transport', address: 'tcp:x:1' }),
        )
      ).code,
    ).toBe('NOT_FOUND');
    const secret = Buffer.from('s3cret').toString('base64');
    const t = await terminators.create({
      service: svc.id,
      router: router.id,
      binding: 'transport',
      address: 'tcp:x:1',
      identity: 'inst',
      identitySecret: secret,
      precedence: 'required',
      cost: 3,
    });
    expect(await terminators.get(t.id)).toMatchObject({
      instanceId: 'inst',
      instanceSecretHash: hashIdentitySecret(secret),
      precedence: 'required',
      cost: 3,
    });
    await terminators.update(t.id, { service: svc.id, router: router.id, binding: 'edge', address: 'a' }, 'replace');
    expect(await terminators.get(t.id)).toMatchObject({
      binding: 'edge',
      cost: 0,
      precedence: 'default',
      instanceId: 'inst',
    });
    expect((await terminators.listForService(svc.id, {})).totalCount).toBe(1);
    await routers.delete('transit', router.id);
    expect(revoked).toContain(router.id);
    expect((await apiError(terminators.get(t.id))).code).toBe('NOT_FOUND');
  });
});

describe('identity service configs', () => {
  it('one config per type per identity and service; unknown identities 404; deletion of the identity clears them', async () => {
    const directory = new FakeIdentityDirectory(new Set(['alice']));
    const isc = new IdentityServiceConfigService(work, directory);
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const services = new ServiceCatalog(work);
    const t = await types.create({ name: uniqueName('t') });
    const c1 = await configs.create({ name: uniqueName('c'), configTypeId: t.id, data: { v: 1 } });
    const c2 = await configs.create({ name: uniqueName('c'), configTypeId: t.id, data: { v: 2 } });
    const s = await services.create({ name: uniqueName('s') });
    expect((await apiError(isc.list('bob'))).code).toBe('NOT_FOUND');
    await isc.associate('alice', [{ serviceId: s.id, configId: c1.id }]);
    await isc.associate('alice', [{ serviceId: s.id, configId: c2.id }]);
    expect((await isc.list('alice')).map((l) => l.configId)).toEqual([c2.id]);
    expect((await apiError(isc.associate('alice', [{ serviceId: 'nope', configId: c1.id }]))).code).toBe('NOT_FOUND');
    expect((await apiError(isc.associate('alice', [{ serviceId: s.id }]))).cause).toMatchObject({
      field: '[0].configId',
    });
    const inUse = await apiError(configs.delete(c2.id));
    expect(inUse.code).toBe('CAN_NOT_DELETE_REFERENCED_ENTITY');
    await isc.disassociate('alice', [{ serviceId: s.id, configId: c2.id }]);
    expect(await isc.list('alice')).toEqual([]);

    await isc.associate('alice', [{ serviceId: s.id, configId: c1.id }]);
    directory.ids.delete('alice');
    const check = await checkInventoryIntegrity(work, schemas, directory, false);
    expect(check.find((r) => r.description.includes('identity alice'))).toMatchObject({ fixed: false });
    const fix = await checkInventoryIntegrity(work, schemas, directory, true);
    expect(fix.find((r) => r.description.includes('identity alice'))).toMatchObject({ fixed: true });
    directory.ids.add('alice');
    expect(await isc.list('alice')).toEqual([]);
  });
});
