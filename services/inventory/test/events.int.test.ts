import { entityStatesReplySchema, inventoryEventTypes, maintenanceActions } from '@ziti/contracts';
import { type Database, type Db, queryRows } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../test/support/infra.ts';
import { AjvSchemaValidator } from '../src/config-types/ajv-schema-validator.adapter.ts';
import { builtinConfigTypes } from '../src/config-types/builtin-config-types.domain.ts';
import { ConfigTypeService } from '../src/config-types/config-types.domain.ts';
import { ConfigService } from '../src/configs/configs.domain.ts';
import {
  AnnouncedIdentityServiceConfigStore,
  IdentityServiceConfigService,
} from '../src/identity-service-configs/identity-service-configs.domain.ts';
import { checkInventoryIntegrity } from '../src/maintenance/inventory-integrity.domain.ts';
import { InventoryMaintenance } from '../src/maintenance/inventory-maintenance.domain.ts';
import { pgMaintenance } from '../src/maintenance/maintenance.store.ts';
import { maintenanceCalls } from '../src/maintenance/maintenance.transport.ts';
import { RouterService } from '../src/routers/routers.domain.ts';
import type { RouterEnrollments } from '../src/routers/routers.ports.ts';
import { ServiceCatalog } from '../src/services/services.domain.ts';
import type { Config } from '../src/shared/model.domain.ts';
import type { InventoryStores, UnitOfWork } from '../src/shared/stores.ports.ts';
import { FakeIdentityDirectory, inventoryDatabase } from './support.ts';

/**
 * The events inventory writes to its outbox (full state, versioned, in the transaction of the
 * change) for edge routers, configs, config types and identity service configs, and the
 * `entityStates` pages it answers for them, on real Postgres.
 */
let database: Database;
let work: UnitOfWork;
let read: (tx: Db) => InventoryStores;
let drop: () => Promise<void>;
const schemas = new AjvSchemaValidator();
const identities = new FakeIdentityDirectory();
let entityStates: (payload: unknown) => Promise<unknown>;

beforeAll(async () => {
  ({ database, work, read, drop } = await inventoryDatabase('postgres'));
  entityStates = maintenanceCalls(
    pgMaintenance(database, new InventoryMaintenance({ work, read, schemas, identities })),
  )[maintenanceActions.entityStates]!;
});
afterAll(async () => {
  await drop?.();
});

interface OutboxRow {
  subject: string;
  type: string;
  version: number;
  payload: Record<string, unknown>;
}

/** Every event in the outbox, oldest first, each checked against the schema of its type and version. */
async function outbox(): Promise<OutboxRow[]> {
  const rows = await queryRows<OutboxRow>(
    database.db,
    'select subject, type, version, payload from outbox order by id',
  );
  const definitions = Object.values(inventoryEventTypes);
  return rows.map((r) => {
    const payload = (typeof r.payload === 'string' ? JSON.parse(r.payload) : r.payload) as Record<string, unknown>;
    const def = definitions.find((d) => d.type === r.type);
    expect(def, `event type ${r.type} is published`).toBeDefined();
    expect(r.version).toBe(def!.version);
    expect(r.subject).toBe(`ziti.evt.inventory.${r.type}`);
    expect(def!.schema.safeParse(payload).success, `${r.type} ${JSON.stringify(payload)}`).toBe(true);
    return { ...r, payload };
  });
}
const eventsOf = async (id: string, prefix: string) =>
  (await outbox()).filter((e) => e.payload.id === id && e.type.startsWith(prefix));

async function states(payload: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  return entityStatesReplySchema.parse(await entityStates(payload)).states;
}

const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Every state of a type, page by page (`after`), checking pages come in bytewise id order. */
async function allStates(type: string, limit: number): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await states({ type, limit, ...(after === undefined ? {} : { after }) });
    out.push(...page);
    if (page.length < limit) break;
    after = String(page[page.length - 1]!.id);
  }
  const ids = out.map((s) => String(s.id));
  expect(ids).toEqual([...ids].sort(bytewise));
  expect(new Set(ids).size).toBe(ids.length);
  return out;
}

const noEnrollments: RouterEnrollments = {
  issue: async () => null,
  revoke: async () => undefined,
  pending: async () => new Map(),
};

describe('edge router state', () => {
  it('carries hostname and supportedProtocols in its events and entity states', async () => {
    const routers = new RouterService(work, noEnrollments);
    const r = await routers.create('edge', { name: uniqueName('er'), cost: 7, noTraversal: true });
    // What a router announces when it connects (no router control plane yet: written directly).
    await work(async (s) => {
      const current = (await s.routers.get(r.id))!;
      await s.routers.update({
        ...current,
        hostname: 'er1.example',
        supportedProtocols: { tls: 'tls://er1.example:3022', wss: 'wss://er1.example:3023' },
      });
    });
    await routers.update('edge', r.id, { disabled: true }, 'patch');
    const events = await eventsOf(r.id, 'edgeRouter.');
    expect(events.map((e) => e.type)).toEqual(['edgeRouter.created', 'edgeRouter.updated']);
    expect(events[0]!.payload).toMatchObject({ hostname: '', supportedProtocols: {}, cost: 7, noTraversal: true });
    const expected = {
      id: r.id,
      name: r.name,
      hostname: 'er1.example',
      supportedProtocols: { tls: 'tls://er1.example:3022', wss: 'wss://er1.example:3023' },
      cost: 7,
      noTraversal: true,
      disabled: true,
      isVerified: false,
      fingerprint: null,
    };
    expect(events[1]!.payload).toMatchObject(expected);
    expect(await states({ type: 'edgeRouter', ids: [r.id] })).toEqual([events[1]!.payload]);

    await routers.delete('edge', r.id);
    const deleted = (await eventsOf(r.id, 'edgeRouter.')).at(-1)!;
    expect(deleted.type).toBe('edgeRouter.deleted');
    expect(deleted.payload).toMatchObject({ ...expected, hostname: 'er1.example' });
  });
});

describe('config types and configs', () => {
  it('announces every change of a config type with its full state, the built-in ones created at seeding', async () => {
    const types = new ConfigTypeService(work, schemas);
    expect(await types.seedBuiltins()).toBe(true);
    const seeded = (await outbox()).filter((e) => e.type === 'configType.created');
    expect(seeded.map((e) => e.payload.id).sort()).toEqual(builtinConfigTypes.map((t) => t.id).sort());
    const intercept = seeded.find((e) => e.payload.name === 'intercept.v1')!.payload;
    expect(intercept.schema).toEqual(builtinConfigTypes.find((t) => t.name === 'intercept.v1')!.schema);

    const schema = { type: 'object', properties: { port: { type: 'integer' } } };
    const t = await types.create({ name: uniqueName('t'), schema, tags: { team: 'a' } });
    await types.update(t.id, { tags: { team: 'b' } }, 'patch');
    await types.delete(t.id);
    const events = await eventsOf(t.id, 'configType.');
    expect(events.map((e) => e.type)).toEqual(['configType.created', 'configType.updated', 'configType.deleted']);
    expect(events[0]!.payload).toEqual({
      id: t.id,
      name: t.name,
      schema,
      tags: { team: 'a' },
      createdAt: t.createdAt.toISOString(),
      updatedAt: t.updatedAt.toISOString(),
    });
    expect(events[1]!.payload).toMatchObject({ name: t.name, schema, tags: { team: 'b' } });
    expect(events[2]!.payload).toMatchObject({ id: t.id, name: t.name, tags: { team: 'b' } });
  });

  it('announces every change of a config with its full state', async () => {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const type = await types.create({ name: uniqueName('t') });
    const c = await configs.create({ name: uniqueName('c'), configTypeId: type.id, data: { a: 1 }, tags: { x: 1 } });
    await configs.update(c.id, { data: { a: 2, b: [1, 2] } }, 'patch');
    await configs.update(c.id, { name: `${c.name}-2`, data: { a: 3 } }, 'replace');
    const services = new ServiceCatalog(work);
    const svc = await services.create({ name: uniqueName('s'), configs: [c.id] });
    await configs.delete(c.id);
    const events = await eventsOf(c.id, 'config.');
    expect(events.map((e) => e.type)).toEqual(['config.created', 'config.updated', 'config.updated', 'config.deleted']);
    expect(events[0]!.payload).toEqual({
      id: c.id,
      name: c.name,
      configTypeId: type.id,
      data: { a: 1 },
      tags: { x: 1 },
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
    });
    expect(events[1]!.payload).toMatchObject({ name: c.name, data: { a: 2, b: [1, 2] }, tags: { x: 1 } });
    expect(events[2]!.payload).toMatchObject({ name: `${c.name}-2`, data: { a: 3 }, tags: {} });
    expect(events[3]!.payload).toMatchObject({ id: c.id, name: `${c.name}-2`, configTypeId: type.id });
    // the service that listed it was announced without it, in the same change
    expect((await eventsOf(svc.id, 'service.')).at(-1)!.payload).toMatchObject({ configs: [] });
  });

  it('answers entityStates pages of configs and config types in bytewise id order, by ids too', async () => {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const type = await types.create({ name: uniqueName('t') });
    const created: Config[] = [];
    for (let i = 0; i < 7; i++)
      created.push(await configs.create({ name: uniqueName('c'), configTypeId: type.id, data: { i } }));

    const allConfigs = await allStates('config', 3);
    const stored = await queryRows<{ id: string }>(database.db, 'select id from configs');
    expect(allConfigs.map((s) => s.id)).toEqual(stored.map((r) => r.id).sort(bytewise));
    const mine = allConfigs.filter((s) => created.some((c) => c.id === s.id));
    expect(mine).toHaveLength(7);
    // a page's states are what the last event of each config said
    for (const s of mine) expect((await eventsOf(String(s.id), 'config.')).at(-1)!.payload).toEqual(s);

    const picked = [created[4]!.id, created[1]!.id, 'no-such-config'];
    expect((await states({ type: 'config', ids: picked })).map((s) => s.id)).toEqual(
      [created[4]!.id, created[1]!.id].sort(bytewise),
    );

    const allTypes = await allStates('configType', 2);
    const storedTypes = await queryRows<{ id: string }>(database.db, 'select id from config_types');
    expect(allTypes.map((s) => s.id)).toEqual(storedTypes.map((r) => r.id).sort(bytewise));
    const [one] = await states({ type: 'configType', ids: [type.id] });
    expect(one).toEqual((await eventsOf(type.id, 'configType.')).at(-1)!.payload);
  });
});

describe('identity service configs', () => {
  /** Two services and configs of two types; ids chosen so bytewise and locale order differ. */
  async function fixture() {
    const types = new ConfigTypeService(work, schemas);
    const configs = new ConfigService(work, schemas);
    const services = new ServiceCatalog(work);
    const [t1, t2] = [await types.create({ name: uniqueName('t') }), await types.create({ name: uniqueName('t') })];
    const mk = (typeId: string) => configs.create({ name: uniqueName('c'), configTypeId: typeId, data: {} });
    const [c1, c2, c3] = [await mk(t1.id), await mk(t2.id), await mk(t1.id)];
    const [s1, s2] = [
      await services.create({ name: uniqueName('s') }),
      await services.create({ name: uniqueName('s') }),
    ];
    return { c1, c2, c3, s1, s2 };
  }
  const updates = async (identityId: string) =>
    (await outbox())
      .filter((e) => e.type === 'identityServiceConfigs.updated' && e.payload.id === identityId)
      .map((e) => e.payload);
  const pairsOf = (...pairs: [string, string][]) =>
    pairs
      .map(([serviceId, configId]) => ({ serviceId, configId }))
      .sort((a, b) => bytewise(a.serviceId, b.serviceId) || bytewise(a.configId, b.configId));

  it('announces the full, sorted list of an identity on every change, and [] once they are gone', async () => {
    const { c1, c2, c3, s1, s2 } = await fixture();
    const identityId = uniqueName('Ident');
    identities.ids.add(identityId);
    const isc = new IdentityServiceConfigService(work, identities);

    await isc.associate(identityId, [
      { serviceId: s2.id, configId: c2.id },
      { serviceId: s1.id, configId: c1.id },
      { serviceId: s2.id, configId: c1.id },
    ]);
    await isc.associate(identityId, [{ serviceId: s1.id, configId: c1.id }]); // no change: no event
    await isc.associate(identityId, [{ serviceId: s2.id, configId: c3.id }]); // replaces c1 (same type) on s2
    await isc.disassociate(identityId, [{ serviceId: s2.id, configId: c2.id }]);
    await isc.disassociate(identityId, [{ serviceId: s2.id, configId: c2.id }]); // nothing left to remove
    await isc.disassociate(identityId, []);

    const envelope = (serviceConfigs: { serviceId: string; configId: string }[]) => ({
      id: identityId,
      identityId,
      serviceConfigs,
    });
    expect(await updates(identityId)).toEqual([
      envelope(pairsOf([s1.id, c1.id], [s2.id, c1.id], [s2.id, c2.id])),
      envelope(pairsOf([s1.id, c1.id], [s2.id, c2.id], [s2.id, c3.id])),
      envelope(pairsOf([s1.id, c1.id], [s2.id, c3.id])),
      envelope([]),
    ]);
  });

  it('announces the identities whose overrides go with a deleted service, identity or integrity fix', async () => {
    const { c1, c2, s1, s2 } = await fixture();
    const [a, b, gone] = [uniqueName('A'), uniqueName('b'), uniqueName('Gone')];
    for (const id of [a, b, gone]) identities.ids.add(id);
    const isc = new IdentityServiceConfigService(work, identities);
    await isc.associate(a, [
      { serviceId: s1.id, configId: c1.id },
      { serviceId: s2.id, configId: c2.id },
    ]);
    await isc.associate(b, [{ serviceId: s1.id, configId: c2.id }]);
    await isc.associate(gone, [{ serviceId: s2.id, configId: c1.id }]);

    // The service goes: its overrides go with it (cascade), each identity's new list is announced.
    await new ServiceCatalog(work).delete(s1.id);
    expect((await updates(a)).at(-1)).toEqual({ id: a, identityId: a, serviceConfigs: pairsOf([s2.id, c2.id]) });
    expect((await updates(b)).at(-1)).toEqual({ id: b, identityId: b, serviceConfigs: [] });
    expect(await updates(gone)).toHaveLength(1);

    // auth's identity.deleted, applied by the consumer in its own transaction.
    await work(async (s) => {
      const consumerStore = new AnnouncedIdentityServiceConfigStore(s.identityServiceConfigs, s.events);
      expect(await consumerStore.deleteByIdentity(a)).toBe(1);
      expect(await consumerStore.deleteByIdentity(a)).toBe(0); // redelivered: nothing, no event
    });
    expect((await updates(a)).at(-1)).toEqual({ id: a, identityId: a, serviceConfigs: [] });
    expect(await updates(a)).toHaveLength(3);

    // A missed identity.deleted, repaired by the integrity fix.
    identities.ids.delete(gone);
    const results = await checkInventoryIntegrity(work, schemas, identities, true);
    expect(results).toContainEqual({
      description: `identity service configs of identity ${gone}, which no longer exists`,
      fixed: true,
    });
    expect((await updates(gone)).at(-1)).toEqual({ id: gone, identityId: gone, serviceConfigs: [] });
    expect(await updates(gone)).toHaveLength(2);
  });

  it('answers entityStates: one state per identity with overrides, in bytewise id order, by ids too', async () => {
    const { c1, c2, c3, s1, s2 } = await fixture();
    const isc = new IdentityServiceConfigService(work, identities);
    const prefix = uniqueName('p');
    // Upper case sorts before lower case bytewise ("Zed" < "alpha"), unlike in most collations.
    const ids = [`${prefix}-alpha`, `${prefix}-Zed`, `${prefix}-beta`, `${prefix}-Beta`, `${prefix}-_x`];
    for (const id of ids) identities.ids.add(id);
    for (const [i, id] of ids.entries()) {
      await isc.associate(id, [
        { serviceId: i % 2 ? s1.id : s2.id, configId: c1.id },
        { serviceId: s2.id, configId: i % 2 ? c2.id : c3.id },
      ]);
    }
    const all = await allStates('identityServiceConfigs', 2);
    const mine = all.filter((s) => ids.includes(String(s.id)));
    expect(mine.map((s) => s.id)).toEqual([...ids].sort(bytewise));
    for (const s of mine) expect(s).toEqual((await updates(String(s.id))).at(-1));

    const [one, none] = [ids[3]!, uniqueName('nobody')];
    expect(await states({ type: 'identityServiceConfigs', ids: [none, one] })).toEqual([(await updates(one)).at(-1)]);
    await isc.disassociate(one, []);
    expect(await states({ type: 'identityServiceConfigs', ids: [one] })).toEqual([]);
  });
});
