import { type Db, queryRows } from '@ziti/platform';
import type { LoginAttemptStore } from './api-sessions.ports.ts';

export class PgLoginAttemptStore implements LoginAttemptStore {
  constructor(private readonly db: Db) {}

  async recordFailure(authenticatorId: string, at: Date): Promise<number> {
    const rows = await queryRows<{ attempts: number }>(
      this.db,
      `insert into updb_failed_attempts (authenticator_id, attempts, last_failed_at) values ($1, 1, $2)
       on conflict (authenticator_id) do update
         set attempts = updb_failed_attempts.attempts + 1, last_failed_at = $2
       returning attempts`,
      [authenticatorId, at],
    );
    return rows[0]?.attempts ?? 1;
  }

  async reset(authenticatorId: string): Promise<void> {
    await queryRows(this.db, 'delete from updb_failed_attempts where authenticator_id = $1', [authenticatorId]);
  }
}
