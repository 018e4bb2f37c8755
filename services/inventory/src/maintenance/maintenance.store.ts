import type { IntegrityResult } from '@ziti/contracts';
import {
  type Database,
  type Db,
  type ServiceMaintenance,
  databaseMaintenance,
  dateOrNull,
  json,
  queryRows,
} from '@ziti/platform';
import type { IntegrityJobState, IntegrityJobStore, RateLimitStore } from './database-maintenance.ports.ts';
import type { InventoryMaintenance } from './inventory-maintenance.domain.ts';

type Row = Record<string, unknown>;

/** The `integrity_job` row: replicas take it in turn with a lease (now() of the database, one clock). */
export class PgIntegrityJobStore implements IntegrityJobStore {
  constructor(private readonly db: Db) {}

  async tryStart(owner: string, fix: boolean, leaseMs: number): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `update integrity_job set in_progress = true, fixing = $2, started_at = now(), ended_at = null, error = null,
         too_many_errors = false, results = '[]'::jsonb, lease_owner = $1, lease_until = now() + ($3::int * interval '1 millisecond')
       where id = 1 and (not in_progress or lease_until < now())
       returning id`,
      [owner, fix, leaseMs],
    );
    return rows.length > 0;
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `update integrity_job set lease_until = now() + ($2::int * interval '1 millisecond') where id = 1 and in_progress and lease_owner = $1 returning id`,
      [owner, leaseMs],
    );
    return rows.length > 0;
  }

  async finish(
    owner: string,
    outcome: { results: IntegrityResult[]; tooManyErrors: boolean; error: string | null },
  ): Promise<void> {
    await queryRows(
      this.db,
      `update integrity_job set in_progress = false, ended_at = now(), results = $2::jsonb, too_many_errors = $3, error = $4, lease_until = null
       where id = 1 and lease_owner = $1 and in_progress`,
      [owner, JSON.stringify(outcome.results), outcome.tooManyErrors, outcome.error],
    );
  }

  async read(): Promise<IntegrityJobState & { leaseExpired: boolean }> {
    const rows = await queryRows<Row>(
      this.db,
      'select *, (lease_until is not null and lease_until < now()) as lease_expired from integrity_job where id = 1',
    );
    const r = rows[0] ?? {};
    return {
      inProgress: Boolean(r.in_progress),
      fixingErrors: Boolean(r.fixing),
      tooManyErrors: Boolean(r.too_many_errors),
      startTime: dateOrNull(r.started_at),
      endTime: dateOrNull(r.ended_at),
      error: (r.error as string | null | undefined) ?? null,
      results: json<IntegrityResult[]>(r.results, []),
      leaseExpired: Boolean(r.lease_expired),
    };
  }
}

export class PgRateLimitStore implements RateLimitStore {
  constructor(private readonly db: Db) {}

  async tryTake(name: string, intervalMs: number): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `insert into rate_limits (name, last_at) values ($1, now())
       on conflict (name) do update set last_at = now() where rate_limits.last_at < now() - ($2::int * interval '1 millisecond')
       returning name`,
      [name, intervalMs],
    );
    return rows.length > 0;
  }
}

/** The tables inventory owns that `/summary` reports, each a table name with an optional `where` written in code. */
export const summaryTables: Record<string, string> = {
  configTypes: 'config_types',
  configs: 'configs',
  services: 'services',
  routers: 'routers',
  edgeRouters: "routers where kind = 'edge'",
  transitRouters: "routers where kind = 'transit'",
  terminators: 'terminators',
};

/**
 * inventory's maintenance over its database (the platform's `databaseMaintenance`); its integrity
 * check and the states of the entities it owns (read in the platform's snapshot, `tx`) are the
 * domain's `InventoryMaintenance`.
 */
export function pgMaintenance(database: Database, maintenance?: InventoryMaintenance<Db>): ServiceMaintenance {
  return databaseMaintenance({
    service: 'inventory',
    database,
    summaryTables,
    ...(maintenance
      ? {
          integrity: (fix: boolean) => maintenance.check(fix),
          entityStates: {
            service: (r, tx) => maintenance.serviceStates(r, tx),
            edgeRouter: (r, tx) => maintenance.edgeRouterStates(r, tx),
            routerPresence: (r, tx) => maintenance.routerPresenceStates(r, tx),
            config: (r, tx) => maintenance.configStates(r, tx),
            configType: (r, tx) => maintenance.configTypeStates(r, tx),
            identityServiceConfigs: (r, tx) => maintenance.identityServiceConfigsStates(r, tx),
          },
        }
      : {}),
  });
}
