import { ApiError, type EntityDetail, authCallContracts, inventoryCallContracts } from '@ziti/contracts';
import { InProcessBus, callHandlers, serveCalls } from '@ziti/platform';
import type { ListPage } from '@ziti/platform/list-page';
import { describe, expect, it } from 'vitest';
import { BusRelatedEntityDetails } from './owner-details.adapter.ts';
import { RelationService, withOwnerDetails } from './relations.domain.ts';
import type { RelatedEntityDetails, RelationStore } from './relations.ports.ts';

/**
 * The association lists that show identities and edge routers (issue 31): the page is policy's
 * read model's (ids, order, paging, total), each entity its owner's detail (auth, inventory).
 */
const pageOf = <T>(items: T[], totalCount = items.length): ListPage<T> => ({
  items,
  totalCount,
  pagination: { limit: 10, offset: 20 },
  filterableFields: ['name'],
});

const detail = (id: string): EntityDetail => ({ id, name: `owner-${id}`, hasApiSession: true, certPem: 'pem' });

/** An owner knowing `known`, answering in reverse order, recording what it was asked. */
function ownerKnowing(known: string[]) {
  const asked: string[][] = [];
  const answer = async (ids: string[]) => {
    asked.push(ids);
    return ids
      .filter((id) => known.includes(id))
      .map(detail)
      .reverse();
  };
  return { answer, asked };
}

describe('withOwnerDetails', () => {
  it('keeps the page (order, paging, total) and shows each entity as its owner does', async () => {
    const owner = ownerKnowing(['a', 'b', 'c']);
    const page = await withOwnerDetails(pageOf([{ id: 'c' }, { id: 'a' }, { id: 'b' }], 23), owner.answer);
    expect(page).toEqual({ ...pageOf([detail('c'), detail('a'), detail('b')], 23) });
    expect(owner.asked).toEqual([['c', 'a', 'b']]);
  });

  it('drops an entity its owner no longer knows (deleted meanwhile)', async () => {
    const owner = ownerKnowing(['a', 'c']);
    const page = await withOwnerDetails(pageOf([{ id: 'c' }, { id: 'gone' }, { id: 'a' }], 3), owner.answer);
    expect(page.items).toEqual([detail('c'), detail('a')]);
    expect(page.totalCount).toBe(3);
  });

  it('asks nothing for an empty page', async () => {
    const owner = ownerKnowing([]);
    expect(await withOwnerDetails(pageOf([]), owner.answer)).toEqual(pageOf([]));
    expect(owner.asked).toEqual([]);
  });

  it('fails as the owner fails', async () => {
    const down = () => Promise.reject(new ApiError('TIMEOUT'));
    await expect(withOwnerDetails(pageOf([{ id: 'a' }]), down)).rejects.toMatchObject({ code: 'TIMEOUT' });
  });
});

describe('RelationService identity and edge-router details', () => {
  function relationsOver(exists: boolean, details: RelatedEntityDetails) {
    const store = {
      exists: async () => exists,
      identities: async () => pageOf([{ id: 'i2' }, { id: 'i1' }], 7),
      edgeRouters: async () => pageOf([{ id: 'r1' }, { id: 'r2' }], 2),
    } as unknown as RelationStore;
    return new RelationService((fn) => fn(store), details);
  }
  const identities = ownerKnowing(['i1', 'i2']);
  const edgeRouters = ownerKnowing(['r2']);
  const owners: RelatedEntityDetails = { identities: identities.answer, edgeRouters: edgeRouters.answer };

  it('lists the read model’s page with auth’s identities and inventory’s edge routers', async () => {
    const relations = relationsOver(true, owners);
    const of = { from: 'service' as const, id: 's1' };
    expect(await relations.identityDetails(of, {})).toEqual(pageOf([detail('i2'), detail('i1')], 7));
    expect(await relations.edgeRouterDetails(of, {})).toEqual(pageOf([detail('r2')], 2));
    expect(identities.asked.at(-1)).toEqual(['i2', 'i1']);
    expect(edgeRouters.asked.at(-1)).toEqual(['r1', 'r2']);
  });

  it('a missing source is NOT_FOUND, and no owner is asked', async () => {
    const before = identities.asked.length;
    const relations = relationsOver(false, owners);
    await expect(relations.identityDetails({ from: 'edgeRouter', id: 'x' }, {})).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    expect(identities.asked).toHaveLength(before);
  });
});

describe('BusRelatedEntityDetails', () => {
  it('asks auth and inventory, each detail passed through whole', async () => {
    const bus = new InProcessBus();
    const whole = { ...detail('i1'), envInfo: { os: 'linux' }, authenticators: { updb: { id: 'a1' } } };
    serveCalls(
      bus,
      'auth',
      callHandlers(
        { identityDetails: authCallContracts.identityDetails },
        {
          identityDetails: async ({ ids }) => ({ details: ids.includes('i1') ? [whole] : [] }),
        },
      ),
    );
    serveCalls(
      bus,
      'inventory',
      callHandlers(
        { edgeRouterDetails: inventoryCallContracts.edgeRouterDetails },
        {
          edgeRouterDetails: async ({ ids }) => ({ details: ids.map(detail) }),
        },
      ),
    );
    const owners = new BusRelatedEntityDetails(bus);
    expect(await owners.identities(['i1', 'gone'])).toEqual([whole]);
    expect(await owners.edgeRouters(['r1'])).toEqual([detail('r1')]);
    await bus.close();
  });

  it('an owner that is not there is the API’s 503 (SERVICE_UNAVAILABLE), never a 500', async () => {
    const bus = new InProcessBus();
    const owners = new BusRelatedEntityDetails(bus);
    await expect(owners.identities(['i1'])).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await expect(owners.edgeRouters(['r1'])).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await bus.close();
  });
});
