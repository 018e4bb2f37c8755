import type { RouterApiSession } from '@ziti/contracts';
import { cuid } from '@ziti/platform/ids';
import type { Logger } from '@ziti/platform/logger';
import type { RouterLink } from '../routers/router-link.ports.ts';
import type { ApiSessionSource } from './api-sessions.ports.ts';

/** The API sessions of one full synchronisation message (the reference's chunk). */
export const fullSyncChunk = 100;

/**
 * Edge state on the routers (ROUTER-FACTS §3, ziti `controller/sync_strats/sync_instant.go`): every
 * live API session reaches every connected edge router, in full when it connects and one by one as
 * sessions open, change and end. What was sent is remembered by id (the events of an ended session
 * carry its id, not its token), so an end reaches the routers that know the token, and a bind or a
 * dial can check the fingerprints of the session it comes with.
 */
export class ApiSessionSync {
  private readonly known = new Map<string, RouterApiSession>();

  constructor(
    private readonly source: ApiSessionSource,
    private readonly edgeLinks: () => RouterLink[],
    private readonly logger: Logger,
  ) {}

  /** A freshly connected edge router gets every live session, a chunk at a time at the pace its socket takes. */
  async fullSync(link: RouterLink): Promise<void> {
    // Time-ordered: a router takes a larger sync id as the newer sync.
    const id = cuid();
    let after: string | undefined;
    let sequence = 0;
    for (;;) {
      const page = await this.source.page(after, fullSyncChunk);
      for (const s of page.sessions) this.known.set(s.id, s);
      const isLast = page.next === null;
      if (link.closed) return;
      // Every chunk, and the last even when empty (the router waits for `isLast`).
      if (page.sessions.length > 0 || sequence === 0 || isLast)
        await link.addApiSessions(page.sessions, { fullState: true, state: { id, isLast, sequence } });
      sequence++;
      if (isLast) return;
      after = page.next!;
    }
  }

  /** auth signalled a session that opened. */
  opened(session: RouterApiSession): void {
    this.known.set(session.id, session);
    const state = { id: cuid(), isLast: true, sequence: 0 };
    for (const link of this.edgeLinks())
      void link.addApiSessions([session], { fullState: false, state }).catch(() => undefined);
  }

  /** The certificates of these identities changed: their sessions' fingerprints change with them. */
  async identitiesChanged(identityIds: string[]): Promise<void> {
    const affected = identityIds.filter((id) => [...this.known.values()].some((s) => s.identityId === id));
    if (affected.length === 0) return;
    const sessions = await this.source.of(affected);
    for (const s of sessions) this.known.set(s.id, s);
    if (sessions.length === 0) return;
    for (const link of this.edgeLinks()) link.updateApiSessions(sessions);
  }

  /** Sessions ended (logout, deletion, expiry, the identity disabled or deleted): every router drops them. */
  ended(ids: string[]): void {
    const tokens: string[] = [];
    for (const id of ids) {
      const s = this.known.get(id);
      if (!s) continue;
      this.known.delete(id);
      tokens.push(s.token);
    }
    if (tokens.length === 0) return;
    for (const link of this.edgeLinks()) link.removeApiSessions(tokens);
  }

  /**
   * A router's heartbeat lists the sessions its connections use: they stay alive; any that is no
   * longer live is dropped from that router.
   */
  async heartbeat(link: RouterLink, tokens: string[]): Promise<void> {
    const gone = await this.source.touch(tokens);
    if (gone.length > 0) link.removeApiSessions(gone);
  }

  /** The session with this id as routers were told of it; asked of auth when this replica never saw it. */
  async session(apiSessionId: string, identityId: string): Promise<RouterApiSession | undefined> {
    const known = this.known.get(apiSessionId);
    if (known) return known;
    const sessions = await this.source.of([identityId]);
    for (const s of sessions) this.known.set(s.id, s);
    return this.known.get(apiSessionId);
  }

  /** Every connected edge router gets every session again (after signals or events may have been missed). */
  async resyncAll(): Promise<void> {
    for (const link of this.edgeLinks()) {
      await this.fullSync(link).catch((err: unknown) =>
        this.logger.warn({ err, routerId: link.routerId }, 'the router could not be resynchronised'),
      );
    }
  }

  get size(): number {
    return this.known.size;
  }
}
