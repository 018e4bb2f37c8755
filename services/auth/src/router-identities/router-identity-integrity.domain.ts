import { zitiqlString } from '@ziti/zitiql/literal';
import { type IntegrityResult, edgeRouterState } from '@ziti/contracts';
import type { IdentityStore } from '../identities/identities.ports.ts';
import { type RouterIdentities, type RouterIdentityStores, routerIdentityType } from './router-identities.domain.ts';

/** A ZitiQL string literal. */

/** What the check of Router identities reads and, when fixing, writes. */
export interface RouterIdentityIntegrityPorts {
  /** inventory's edge-router states, page by page. */
  edgeRouterPages(): AsyncIterable<{ states: Record<string, unknown>[] }>;
  /** Reads identities, each read in a transaction of its own. */
  read: <T>(fn: (identities: Pick<IdentityStore, 'get' | 'list'>) => Promise<T>) => Promise<T>;
  /** One unit of work over the identities: the events of a fix leave with it. */
  work: <T>(fn: (s: RouterIdentityStores) => Promise<T>) => Promise<T>;
}

/**
 * Router identities against inventory's edge routers: every tunneler-enabled router has its
 * Router identity with its name, and no Router identity outlives its router or its tunneling.
 * Fixing applies the router's current state.
 */
export class RouterIdentityIntegrity {
  constructor(
    private readonly ports: RouterIdentityIntegrityPorts,
    private readonly routerIdentities: RouterIdentities,
  ) {}

  async check(fix: boolean): Promise<IntegrityResult[]> {
    const { read, work } = this.ports;
    const results: IntegrityResult[] = [];
    const routers = new Set<string>();
    for await (const { states: page } of this.ports.edgeRouterPages()) {
      for (const raw of page) {
        const parsed = edgeRouterState.safeParse(raw);
        if (!parsed.success) continue;
        const router = parsed.data;
        routers.add(router.id);
        const identity = await read((identities) => identities.get(router.id));
        const problem = !router.isTunnelerEnabled
          ? identity?.typeId === routerIdentityType
            ? `router identity ${router.id} exists but edge router ${router.name} is not tunneler-enabled`
            : null
          : !identity
            ? `tunneler-enabled edge router ${router.id} (${router.name}) has no router identity`
            : identity.typeId === routerIdentityType &&
                identity.name !== router.name &&
                identity.name !== `${router.name}-${router.id}`
              ? `router identity ${router.id} is named ${identity.name}, its edge router ${router.name}`
              : null;
        if (!problem) continue;
        if (fix) await work((s) => this.routerIdentities.apply(s, router, false, true));
        results.push({ description: problem, fixed: fix });
      }
    }
    let after: string | undefined;
    for (;;) {
      const where = `type = "${routerIdentityType}"${after === undefined ? '' : ` and id > ${zitiqlString(after)}`}`;
      const page = await read((identities) => identities.list({ filter: `${where} sort by id limit 500` }));
      for (const identity of page.items) {
        if (routers.has(identity.id)) continue;
        if (fix) await work((s) => this.routerIdentities.remove(s, identity));
        results.push({
          description: `router identity ${identity.id} (${identity.name}) has no edge router`,
          fixed: fix,
        });
      }
      if (page.items.length < 500) break;
      after = page.items[page.items.length - 1]!.id;
    }
    return results;
  }
}
