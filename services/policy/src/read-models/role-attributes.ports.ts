import type { EdgeRouterReadModel, IdentityReadModel, ServiceReadModel } from './read-models.ports.ts';

/** The read models whose live entities' role attributes `/…-role-attributes` list. */
export interface RoleAttributeStores {
  identities: Pick<IdentityReadModel, 'roleAttributes'>;
  services: Pick<ServiceReadModel, 'roleAttributes'>;
  edgeRouters: Pick<EdgeRouterReadModel, 'roleAttributes'>;
}

export type RoleAttributeReader = <T>(fn: (stores: RoleAttributeStores) => Promise<T>) => Promise<T>;

export type RoleAttributeSource = keyof RoleAttributeStores;
