import type { Db } from '@ziti/platform';
import { eq } from 'drizzle-orm';
import type { IdentityTrace, IdentityTraceStore } from '../domain/ports.ts';
import { identityTraces } from './schema.ts';

export class PgIdentityTraceStore implements IdentityTraceStore {
  constructor(private readonly db: Db) {}

  async get(identityId: string): Promise<IdentityTrace | null> {
    const rows = await this.db.select().from(identityTraces).where(eq(identityTraces.identityId, identityId));
    return rows[0] ?? null;
  }

  async put(t: IdentityTrace): Promise<void> {
    await this.db
      .insert(identityTraces)
      .values(t)
      .onConflictDoUpdate({
        target: identityTraces.identityId,
        set: { enabled: t.enabled, traceId: t.traceId, until: t.until, channels: t.channels, updatedAt: t.updatedAt },
      });
  }
}
