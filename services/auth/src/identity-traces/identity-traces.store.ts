import { type Db, date, dateOrNull, queryRows } from '@ziti/platform';
import type { IdentityTrace, IdentityTraceStore } from './identity-traces.ports.ts';

type Row = Record<string, unknown>;

function traceFromRow(r: Row): IdentityTrace {
  return {
    identityId: String(r.identity_id),
    enabled: Boolean(r.enabled),
    traceId: (r.trace_id as string | null) ?? null,
    until: dateOrNull(r.until),
    channels: (r.channels as string[] | null) ?? [],
    updatedAt: date(r.updated_at),
  };
}

export class PgIdentityTraceStore implements IdentityTraceStore {
  constructor(private readonly db: Db) {}

  async get(identityId: string): Promise<IdentityTrace | null> {
    const [row] = await queryRows<Row>(
      this.db,
      'select identity_id, enabled, trace_id, until, channels, updated_at from identity_traces where identity_id = $1',
      [identityId],
    );
    return row ? traceFromRow(row) : null;
  }

  async put(t: IdentityTrace): Promise<void> {
    await queryRows(
      this.db,
      `insert into identity_traces (identity_id, enabled, trace_id, until, channels, updated_at)
         values ($1, $2, $3, $4, $5::text[], $6)
       on conflict (identity_id) do update set enabled = $2, trace_id = $3, until = $4, channels = $5::text[],
         updated_at = $6`,
      [t.identityId, t.enabled, t.traceId, t.until, t.channels, t.updatedAt],
    );
  }
}
