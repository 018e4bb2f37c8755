import { describe, expect, it } from 'vitest';
import type { Router } from '../shared/model.domain.ts';
import type { InventoryStores } from '../shared/stores.ports.ts';
import { RouterService } from './routers.domain.ts';

/** `RouterService.getMany`, what the `edgeRouterDetails` call reads (policy's association lists). */
function routerNamed(id: string, kind: Router['kind'] = 'edge'): Router {
  const at = new Date('2024-05-01T10:00:00.000Z');
  return {
    id,
    kind,
    name: `name-${id}`,
    cost: 0,
    noTraversal: false,
    disabled: false,
    isVerified: true,
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
    createdAt: at,
    updatedAt: at,
  };
}

function serviceOver(routers: Router[]) {
  const asked: { ids: string[]; kind: string | undefined }[] = [];
  const store = {
    getMany: async (ids: string[], kind?: Router['kind']) => {
      asked.push({ ids, kind });
      return routers.filter((r) => ids.includes(r.id) && (kind === undefined || r.kind === kind)).reverse();
    },
  };
  const work = <T>(fn: (s: InventoryStores) => Promise<T>) => fn({ routers: store } as unknown as InventoryStores);
  return { service: new RouterService(work), asked };
}

describe('RouterService.getMany', () => {
  it('answers the routers of a kind in the order of the ids, each once, leaving the others out', async () => {
    const { service, asked } = serviceOver([routerNamed('a'), routerNamed('b'), routerNamed('t', 'transit')]);
    const found = await service.getMany('edge', ['b', 'nobody', 't', 'a', 'b']);
    expect(found.map((r) => r.id)).toEqual(['b', 'a']);
    expect(asked).toEqual([{ ids: ['b', 'nobody', 't', 'a', 'b'], kind: 'edge' }]);
    expect((await service.getMany(undefined, ['t', 'a'])).map((r) => r.id)).toEqual(['t', 'a']);
  });

  it('reads nothing for no ids', async () => {
    const { service, asked } = serviceOver([routerNamed('a')]);
    expect(await service.getMany('edge', [])).toEqual([]);
    expect(asked).toEqual([]);
  });
});
