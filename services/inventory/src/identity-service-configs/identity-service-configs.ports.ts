import type { EventSink } from '@ziti/platform/event-sink';
import type { IdentityServiceConfig } from '../shared/model.domain.ts';

export interface IdentityServiceConfigStore {
  listByIdentity(identityId: string): Promise<IdentityServiceConfig[]>;
  /** The overrides of several identities. */
  listByIdentities(identityIds: string[]): Promise<IdentityServiceConfig[]>;
  /** Distinct identity ids with an override for the service. */
  identityIdsByService(serviceId: string): Promise<string[]>;
  /** Sets the identity's config of that type for that service, replacing one of the same type. */
  upsert(link: IdentityServiceConfig): Promise<void>;
  delete(identityId: string, serviceId: string, configId: string): Promise<number>;
  deleteByIdentity(identityId: string): Promise<number>;
  /** Distinct identity ids with overrides, one page in id order (bytewise); `ids` narrows to those. */
  identityIds(after: string | undefined, limit: number, ids?: string[]): Promise<string[]>;
  countByConfig(configId: string): Promise<number>;
}

/** The overrides store of a transaction and the sink its events leave through. */
export interface OverrideStores {
  identityServiceConfigs: IdentityServiceConfigStore;
  events: EventSink;
}

/** Which identities exist (auth owns them). */
export interface IdentityDirectory {
  /** The subset of `ids` that exist. */
  existing(ids: string[]): Promise<Set<string>>;
}
