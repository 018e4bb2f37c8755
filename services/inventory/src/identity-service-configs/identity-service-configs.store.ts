import { type Db, entityStatesPage, queryRows, statesPageRows } from '@ziti/platform';
import type { IdentityServiceConfig } from '../shared/model.domain.ts';
import type { Row } from '../shared/store-helpers.store.ts';
import type { IdentityServiceConfigStore } from './identity-service-configs.ports.ts';

function identityServiceConfigFromRow(r: Row): IdentityServiceConfig {
  return {
    identityId: String(r.identity_id),
    serviceId: String(r.service_id),
    configId: String(r.config_id),
    configTypeId: String(r.config_type_id),
  };
}

export class PgIdentityServiceConfigStore implements IdentityServiceConfigStore {
  constructor(private readonly db: Db) {}

  async listByIdentity(identityId: string): Promise<IdentityServiceConfig[]> {
    const rows = await queryRows<Row>(
      this.db,
      'select * from identity_service_configs where identity_id = $1 order by service_id collate "C", config_type_id collate "C"',
      [identityId],
    );
    return rows.map(identityServiceConfigFromRow);
  }

  async listByIdentities(identityIds: string[]): Promise<IdentityServiceConfig[]> {
    if (identityIds.length === 0) return [];
    const rows = await queryRows<Row>(
      this.db,
      `select * from identity_service_configs where identity_id = any($1::text[])
        order by identity_id collate "C", service_id collate "C", config_id collate "C"`,
      [identityIds],
    );
    return rows.map(identityServiceConfigFromRow);
  }

  async identityIdsByService(serviceId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select distinct identity_id collate "C" as id from identity_service_configs where service_id = $1 order by 1',
      [serviceId],
    );
    return rows.map((r) => r.id);
  }

  async upsert(l: IdentityServiceConfig): Promise<void> {
    await queryRows(
      this.db,
      `insert into identity_service_configs (identity_id, service_id, config_type_id, config_id) values ($1, $2, $3, $4)
       on conflict (identity_id, service_id, config_type_id) do update set config_id = excluded.config_id`,
      [l.identityId, l.serviceId, l.configTypeId, l.configId],
    );
  }

  async delete(identityId: string, serviceId: string, configId: string): Promise<number> {
    return (
      await queryRows(
        this.db,
        'delete from identity_service_configs where identity_id = $1 and service_id = $2 and config_id = $3 returning 1',
        [identityId, serviceId, configId],
      )
    ).length;
  }

  async deleteByIdentity(identityId: string): Promise<number> {
    return (
      await queryRows(this.db, 'delete from identity_service_configs where identity_id = $1 returning 1', [identityId])
    ).length;
  }

  /** The identities with overrides, one page of them: what `identityServiceConfigs` states are built from. */
  async identityIds(after: string | undefined, limit: number, ids?: string[]): Promise<string[]> {
    const page = entityStatesPage({ type: 'identityServiceConfigs', after, limit, ids }, 'identity_id');
    const source = {
      columns: 'distinct identity_id collate "C" as id',
      from: 'identity_service_configs',
      key: 'identity_id',
    };
    return (await statesPageRows<{ id: string }>(this.db, source, page)).map((r) => r.id);
  }

  async countByConfig(configId: string): Promise<number> {
    const rows = await queryRows<{ n: number }>(
      this.db,
      'select count(*)::int as n from identity_service_configs where config_id = $1',
      [configId],
    );
    return rows[0]?.n ?? 0;
  }
}
