import type { EdgeRouterReadModel, IdentityReadModel, ListInput, ListPage, ServiceReadModel } from './ports.ts';

/** The read models whose live entities' role attributes `/…-role-attributes` list. */
export interface RoleAttributeStores {
  identities: Pick<IdentityReadModel, 'roleAttributes'>;
  services: Pick<ServiceReadModel, 'roleAttributes'>;
  edgeRouters: Pick<EdgeRouterReadModel, 'roleAttributes'>;
}

export type RoleAttributeReader = <T>(fn: (stores: RoleAttributeStores) => Promise<T>) => Promise<T>;

export type RoleAttributeSource = keyof RoleAttributeStores;

/**
 * `/identity-role-attributes`, `/service-role-attributes`, `/edge-router-role-attributes`: the
 * distinct attributes of the live entities of policy's read models (ZITI-FACTS §3.4).
 */
export class RoleAttributeService {
  constructor(private readonly read: RoleAttributeReader) {}

  list(of: RoleAttributeSource, filter: string | undefined): Promise<ListPage<string>> {
    const input: ListInput = filter === undefined ? {} : { filter };
    return this.read((s) => s[of].roleAttributes(input));
  }
}
