import { ApiError } from '@ziti/contracts';
import type { Config, IdentityServiceConfig, Service } from './model.ts';
import type { IdentityDirectory, UnitOfWork } from './ports.ts';

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

/**
 * An identity's own config for a service, replacing the service's config of the same type for
 * that identity (ZITI-FACTS §10.3). Identities belong to auth: their existence is asked, and
 * their deletion (an event) removes their overrides.
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
    });
  }

  /** Removes the given pairs, or every override of the identity when none are given. */
  async disassociate(identityId: string, list: ServiceConfigPair[] | null | undefined): Promise<void> {
    const pairs = pairsOf(list);
    await this.requireIdentity(identityId);
    await this.work(async (s) => {
      if (pairs.length === 0) {
        await s.identityServiceConfigs.deleteByIdentity(identityId);
        return;
      }
      for (const p of pairs) await s.identityServiceConfigs.delete(identityId, p.serviceId, p.configId);
    });
  }

  /** An identity left: its overrides go (idempotent). */
  async identityDeleted(identityId: string): Promise<number> {
    return this.work((s) => s.identityServiceConfigs.deleteByIdentity(identityId));
  }
}
