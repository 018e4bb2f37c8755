import { ApiError, type IdentityServiceConfigsState, inventoryEventTypes } from '@ziti/contracts';
import type { EventSink } from '@ziti/platform/event-sink';
import type { Config, IdentityServiceConfig, Service } from '../shared/model.domain.ts';
import type { UnitOfWork } from '../shared/stores.ports.ts';
import type {
  IdentityDirectory,
  IdentityServiceConfigStore,
  OverrideStores,
} from './identity-service-configs.ports.ts';

export interface ServiceConfigPair {
  serviceId?: string | null;
  configId?: string | null;
}

export interface IdentityServiceConfigView extends IdentityServiceConfig {
  service: Service | null;
  config: Config | null;
}

/** Caps one request's work (each pair is looked up). */
const maxPairs = 500;

function pairsOf(list: ServiceConfigPair[] | null | undefined): { serviceId: string; configId: string }[] {
  const pairs = list ?? [];
  if (pairs.length > maxPairs)
    throw ApiError.field('serviceConfigs', `at most ${maxPairs} service config pairs per request`, pairs.length);
  return pairs.map((p, i) => {
    if (!p?.serviceId) throw ApiError.field(`[${i}].serviceId`, `[${i}].serviceId in body is required`, p?.serviceId);
    if (!p.configId) throw ApiError.field(`[${i}].configId`, `[${i}].configId in body is required`, p.configId);
    return { serviceId: p.serviceId, configId: p.configId };
  });
}

const bytewise = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** The overrides of one identity as announced: one state per identity, pairs sorted bytewise. */
export function identityServiceConfigsState(
  identityId: string,
  links: Pick<IdentityServiceConfig, 'serviceId' | 'configId'>[],
): IdentityServiceConfigsState {
  return {
    id: identityId,
    identityId,
    serviceConfigs: links
      .map((l) => ({ serviceId: l.serviceId, configId: l.configId }))
      .sort((a, b) => bytewise(a.serviceId, b.serviceId) || bytewise(a.configId, b.configId)),
  };
}

/**
 * Announces the current overrides of each identity (`identityServiceConfigs.updated`, the full
 * list, empty when none are left), inside the transaction that changed them.
 */
export async function emitIdentityServiceConfigs(
  s: { identityServiceConfigs: IdentityServiceConfigStore; events: EventSink },
  identityIds: Iterable<string>,
): Promise<void> {
  const def = inventoryEventTypes.identityServiceConfigsUpdated;
  for (const id of [...new Set(identityIds)].sort(bytewise)) {
    const links = await s.identityServiceConfigs.listByIdentity(id);
    await s.events.emit(def, identityServiceConfigsState(id, links));
  }
}

const samePairs = (a: IdentityServiceConfig[], b: IdentityServiceConfig[]) =>
  JSON.stringify(identityServiceConfigsState('', a)) === JSON.stringify(identityServiceConfigsState('', b));

/**
 * The overrides store of a transaction that is not a unit of work of this domain (the consumer of
 * auth's `identity.deleted`): each change it makes is announced in that transaction, with the
 * sink the transaction's events leave through.
 */
export class AnnouncedIdentityServiceConfigStore implements IdentityServiceConfigStore {
  constructor(
    private readonly store: IdentityServiceConfigStore,
    private readonly events: EventSink,
  ) {}

  private announce(identityId: string): Promise<void> {
    return emitIdentityServiceConfigs({ identityServiceConfigs: this.store, events: this.events }, [identityId]);
  }

  listByIdentity(identityId: string) {
    return this.store.listByIdentity(identityId);
  }
  listByIdentities(identityIds: string[]) {
    return this.store.listByIdentities(identityIds);
  }
  identityIdsByService(serviceId: string) {
    return this.store.identityIdsByService(serviceId);
  }
  identityIds(after: string | undefined, limit: number, ids?: string[]) {
    return this.store.identityIds(after, limit, ids);
  }
  countByConfig(configId: string) {
    return this.store.countByConfig(configId);
  }
  async upsert(link: IdentityServiceConfig): Promise<void> {
    await this.store.upsert(link);
    await this.announce(link.identityId);
  }
  async delete(identityId: string, serviceId: string, configId: string): Promise<number> {
    const removed = await this.store.delete(identityId, serviceId, configId);
    if (removed > 0) await this.announce(identityId);
    return removed;
  }
  async deleteByIdentity(identityId: string): Promise<number> {
    const removed = await this.store.deleteByIdentity(identityId);
    if (removed > 0) await this.announce(identityId);
    return removed;
  }
}

/**
 * An identity's own config for a service, replacing the service's config of the same type for
 * that identity (ZITI-FACTS §10.3). Identities belong to auth: their existence is asked, and
 * their deletion (an event) removes their overrides. Every change of an identity's overrides is
 * announced with the identity's full list (`identityServiceConfigs.updated`).
 */
export class IdentityServiceConfigService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly identities: IdentityDirectory,
  ) {}

  private async requireIdentity(identityId: string): Promise<void> {
    if (!(await this.identities.existing([identityId])).has(identityId))
      throw ApiError.notFound('identity', identityId);
  }

  async list(identityId: string): Promise<IdentityServiceConfigView[]> {
    await this.requireIdentity(identityId);
    return this.work(async (s) => {
      const links = await s.identityServiceConfigs.listByIdentity(identityId);
      const services = new Map(
        (await s.services.getMany([...new Set(links.map((l) => l.serviceId))])).map((x) => [x.id, x]),
      );
      const configs = new Map(
        (await s.configs.getMany([...new Set(links.map((l) => l.configId))])).map((x) => [x.id, x]),
      );
      return links.map((l) => ({
        ...l,
        service: services.get(l.serviceId) ?? null,
        config: configs.get(l.configId) ?? null,
      }));
    });
  }

  /** Sets each pair; a pair whose config has the type of one already set for that service replaces it. */
  async associate(identityId: string, list: ServiceConfigPair[] | null | undefined): Promise<void> {
    const pairs = pairsOf(list);
    await this.requireIdentity(identityId);
    await this.work(async (s) => {
      const before = await s.identityServiceConfigs.listByIdentity(identityId);
      const services = new Set(
        (await s.services.getMany([...new Set(pairs.map((p) => p.serviceId))])).map((x) => x.id),
      );
      const configs = new Map(
        (await s.configs.getMany([...new Set(pairs.map((p) => p.configId))])).map((x) => [x.id, x]),
      );
      for (const p of pairs) {
        if (!services.has(p.serviceId))
          throw new ApiError('NOT_FOUND', {
            field: 'serviceId',
            reason: `service with id ${p.serviceId} not found`,
            value: p.serviceId,
          });
        const config = configs.get(p.configId);
        if (!config)
          throw new ApiError('NOT_FOUND', {
            field: 'configId',
            reason: `config with id ${p.configId} not found`,
            value: p.configId,
          });
        await s.identityServiceConfigs.upsert({
          identityId,
          serviceId: p.serviceId,
          configId: p.configId,
          configTypeId: config.configTypeId,
        });
      }
      if (!samePairs(before, await s.identityServiceConfigs.listByIdentity(identityId)))
        await emitIdentityServiceConfigs(s, [identityId]);
    });
  }

  /** Removes the given pairs, or every override of the identity when none are given. */
  async disassociate(identityId: string, list: ServiceConfigPair[] | null | undefined): Promise<void> {
    const pairs = pairsOf(list);
    await this.requireIdentity(identityId);
    await this.work(async (s) => {
      let removed = 0;
      if (pairs.length === 0) removed = await s.identityServiceConfigs.deleteByIdentity(identityId);
      for (const p of pairs) removed += await s.identityServiceConfigs.delete(identityId, p.serviceId, p.configId);
      if (removed > 0) await emitIdentityServiceConfigs(s, [identityId]);
    });
  }

  /** An identity left: its overrides go (idempotent). */
  async identityDeleted(identityId: string): Promise<number> {
    return this.work(async (s) => {
      const removed = await s.identityServiceConfigs.deleteByIdentity(identityId);
      if (removed > 0) await emitIdentityServiceConfigs(s, [identityId]);
      return removed;
    });
  }

  /**
   * auth's `identity.deleted`, in the consumer's transaction (not a unit of work of this domain):
   * the identity's overrides go, announced with that transaction's events (idempotent). Answers
   * how many went.
   */
  applyIdentityDeleted(s: OverrideStores, identityId: string): Promise<number> {
    return new AnnouncedIdentityServiceConfigStore(s.identityServiceConfigs, s.events).deleteByIdentity(identityId);
  }
}
