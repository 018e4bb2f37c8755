import { configTypeIdsReplySchema, inventoryCallNames } from '@ziti/contracts';
import type { CallTable } from '@ziti/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '../../../../test/support/infra.ts';
import { storeTargets } from '../../../../test/support/store-contract.ts';
import { inventoryDatabase } from '../../test/support.ts';
import { RouterPresenceService } from '../router-presence/router-presence.domain.ts';
import { RouterService } from '../routers/routers.domain.ts';
import { ServiceCatalog } from '../services/services.domain.ts';
import { inventoryCalls } from '../shared/calls.transport.ts';
import { TerminatorService } from '../terminators/terminators.domain.ts';
import { AjvSchemaValidator } from './ajv-schema-validator.adapter.ts';
import { ConfigTypeService } from './config-types.domain.ts';

/**
 * `configTypeIds`, the call auth makes when a login sends `configTypes`: the ids its API session
 * keeps, as the reference's MapConfigTypeNamesToIds maps them, on the real Postgres and on PGlite.
 */
describe.each(storeTargets)('configTypeIds on %s', (target) => {
  let drop: () => Promise<void>;
  let configTypes: ConfigTypeService;
  let calls: CallTable;

  beforeAll(async () => {
    const db = await inventoryDatabase(target);
    drop = db.drop;
    const { work } = db;
    configTypes = new ConfigTypeService(work, new AjvSchemaValidator());
    await configTypes.seedBuiltins();
    const presence = new RouterPresenceService(work);
    calls = inventoryCalls(
      new RouterService(work),
      new TerminatorService(work),
      new ServiceCatalog(work),
      presence,
      configTypes,
    );
  }, 60_000);
  afterAll(async () => {
    await drop?.();
  });

  const ids = async (values: unknown) =>
    configTypeIdsReplySchema.parse(await calls[inventoryCallNames.configTypeIds]!({ values })).ids;

  it('keeps ids, maps names to their ids, drops unknown values, once each, in the order sent', async () => {
    expect(await ids(['intercept.v1', 'nope', 'host.v1'])).toEqual(['g7cIWbcGg', 'NH5p4FpGR']);
    expect(await ids(['NH5p4FpGR', 'host.v1', 'intercept.v1', 'g7cIWbcGg', 'NH5p4FpGR'])).toEqual([
      'NH5p4FpGR',
      'g7cIWbcGg',
    ]);
    expect(await ids(['nope', 'NOPE'])).toEqual([]);
    expect(await ids([])).toEqual([]);
  });

  it('any `all` is just ["all"]', async () => {
    expect(await ids(['intercept.v1', 'all', 'nope'])).toEqual(['all']);
  });

  it('an id is an id before it is a name: a type named after another type’s id stands for that one', async () => {
    const decoy = await configTypes.create({ name: 'g7cIWbcGg' });
    const named = await configTypes.create({ name: uniqueName('ct') });
    expect(await ids(['g7cIWbcGg', named.name, named.id])).toEqual(['g7cIWbcGg', named.id]);
    expect(await ids([decoy.id])).toEqual([decoy.id]);
  });

  it('a malformed request is COULD_NOT_VALIDATE', async () => {
    await expect(ids(['a', 1])).rejects.toMatchObject({ code: 'COULD_NOT_VALIDATE' });
  });
});
