import type { Db } from '@ziti/platform';
import { eq, sql } from 'drizzle-orm';
import type { LoginAttemptStore } from '../domain/ports.ts';
import { updbFailedAttempts } from './schema.ts';

export class PgLoginAttemptStore implements LoginAttemptStore {
  constructor(private readonly db: Db) {}

  async recordFailure(authenticatorId: string, at: Date): Promise<number> {
    const rows = await this.db
      .insert(updbFailedAttempts)
      .values({ authenticatorId, attempts: 1, lastFailedAt: at })
      .onConflictDoUpdate({
        target: updbFailedAttempts.authenticatorId,
        set: { attempts: sql`${updbFailedAttempts.attempts} + 1`, lastFailedAt: at },
      })
      .returning({ attempts: updbFailedAttempts.attempts });
    return rows[0]?.attempts ?? 1;
  }

  async reset(authenticatorId: string): Promise<void> {
    await this.db.delete(updbFailedAttempts).where(eq(updbFailedAttempts.authenticatorId, authenticatorId));
  }
}
