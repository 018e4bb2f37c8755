import type { RouterApiSession } from '@ziti/contracts';
import type { ApiSessionRecord } from '@ziti/platform/sessions/api-session-store';
import type { SessionStore } from '../shared/stores.ports.ts';
import type { CertificateFingerprints } from './router-api-sessions.ports.ts';

/**
 * API sessions as edge routers are told of them (ziti `controller/sync_strats/marshal.go`): the
 * token, and the fingerprints of the certificates the identity may connect with, so a router can
 * check that an SDK presenting the token holds one of them. The router edge (fabric) reads them
 * in pages for a router's full synchronisation, per identity when its certificates change, and
 * keeps those a router still uses alive (the router's API-session heartbeats).
 */
export class RouterApiSessions {
  constructor(
    private readonly sessions: Pick<SessionStore, 'scanLive' | 'listIdsByIdentity' | 'getById' | 'touch'>,
    private readonly fingerprints: CertificateFingerprints,
    private readonly sessionTtlSeconds: number,
  ) {}

  /** A page of the live sessions, from `cursor` (a walk over the session store, not a sort of it). */
  async page(
    cursor: string | undefined,
    limit: number,
  ): Promise<{ sessions: RouterApiSession[]; next: string | null }> {
    const { records, cursor: next } = await this.sessions.scanLive(cursor, limit);
    return { sessions: await this.withFingerprints(records), next };
  }

  /** Every live session of these identities. */
  async of(identityIds: string[]): Promise<RouterApiSession[]> {
    const records: ApiSessionRecord[] = [];
    for (const identityId of new Set(identityIds)) {
      for (const id of await this.sessions.listIdsByIdentity(identityId)) {
        const s = await this.sessions.getById(id, this.sessionTtlSeconds);
        if (s) records.push(s);
      }
    }
    return this.withFingerprints(records);
  }

  /** Slides the expiry of the sessions with these tokens; answers the tokens that are not live. */
  async touch(tokens: string[]): Promise<string[]> {
    const unique = [...new Set(tokens)];
    const touched = await Promise.all(unique.map((t) => this.sessions.touch(t, this.sessionTtlSeconds)));
    return unique.filter((_, i) => touched[i] === null);
  }

  async withFingerprints(
    records: Pick<ApiSessionRecord, 'id' | 'token' | 'identityId'>[],
  ): Promise<RouterApiSession[]> {
    const prints = await this.fingerprints.ofIdentities(records.map((r) => r.identityId));
    return records.map((r) => ({
      id: r.id,
      token: r.token,
      identityId: r.identityId,
      certFingerprints: prints.get(r.identityId) ?? [],
    }));
  }
}
