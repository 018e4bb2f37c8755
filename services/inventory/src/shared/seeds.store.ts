import { type Db, queryRows } from '@ziti/platform';
import type { SeedStore } from './stores.ports.ts';

export class PgSeedStore implements SeedStore {
  constructor(private readonly db: Db) {}

  async claim(name: string): Promise<boolean> {
    return (
      (await queryRows(this.db, 'insert into seeds (name) values ($1) on conflict do nothing returning name', [name]))
        .length > 0
    );
  }
}
