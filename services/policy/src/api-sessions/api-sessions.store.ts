import { type Db, queryRows } from '@ziti/platform';
import type { ApiSessionStart } from './api-sessions.domain.ts';

/**
 * The API sessions policy knows of, kept from auth's apiSession events in the consumer's transaction.
 * Every write is order-independent: an end wins over a late start, a start never reopens an end.
 */
export class PgApiSessions {
  constructor(private readonly db: Db) {}

  async started(s: ApiSessionStart) {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, auth_method, is_mfa_required, is_mfa_complete, config_types, created_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (id) do update set auth_method = excluded.auth_method, is_mfa_required = excluded.is_mfa_required,
         is_mfa_complete = api_sessions.is_mfa_complete or excluded.is_mfa_complete,
         config_types = excluded.config_types, created_at = excluded.created_at`,
      [s.id, s.identityId, s.authMethod, s.isMfaRequired, s.isMfaComplete, s.configTypes, s.createdAt],
      { prepare: true },
    );
  }

  async mfaPassed(id: string, identityId: string, at: string) {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, is_mfa_complete, mfa_passed_at, created_at)
       values ($1, $2, true, $3, $3)
       on conflict (id) do update set is_mfa_complete = true,
         mfa_passed_at = greatest(api_sessions.mfa_passed_at, excluded.mfa_passed_at)`,
      [id, identityId, at],
      { prepare: true },
    );
  }

  /** Marks the API session ended and removes its edge sessions; returns how many. */
  async ended(id: string, identityId: string, at: string): Promise<number> {
    await queryRows(
      this.db,
      `insert into api_sessions (id, identity_id, created_at, ended_at) values ($1, $2, $3, $3)
       on conflict (id) do update set ended_at = coalesce(api_sessions.ended_at, excluded.ended_at)`,
      [id, identityId, at],
      { prepare: true },
    );
    // Locks the row: a session creation that holds it finishes first, and its session goes here.
    await queryRows(this.db, 'select 1 from api_sessions where id = $1 for update', [id], { prepare: true });
    const removed = await queryRows(this.db, 'delete from sessions where api_session_id = $1 returning id', [id], {
      prepare: true,
    });
    // Ended API sessions are kept an hour against late events, then forgotten.
    await queryRows(this.db, "delete from api_sessions where ended_at < now() - interval '1 hour'");
    return removed.length;
  }
}
