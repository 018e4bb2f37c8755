import { type Db, queryRows } from '@ziti/platform';
import type { RouterEventPositionStore } from './router-identities.domain.ts';

/** Each router's last applied `edgeRouter.*` event position (`router_event_positions`). */
export class PgRouterEventPositions implements RouterEventPositionStore {
  constructor(private readonly db: Db) {}

  async advance(routerId: string, position: number): Promise<boolean> {
    const newer = await queryRows(
      this.db,
      `insert into router_event_positions (router_id, position) values ($1, $2)
       on conflict (router_id) do update set position = excluded.position
         where router_event_positions.position < excluded.position
       returning router_id`,
      [routerId, position],
    );
    return newer.length > 0;
  }
}
