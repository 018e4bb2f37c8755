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
  /** identity id → ids of its known sessions (certificate changes name the identity). */
  private readonly byIdentity = new Map<string, Set<string>>();

  constructor(
    private readonly source: ApiSessionSource,
    private readonly edgeLinks: () => RouterLink[],
    private readonly logger: Logger,
  ) {}

  private remember(s: RouterApiSession): void {
    const before = this.known.get(s.id);
    if (before && before.identityId !== s.identityId) this.unindex(before);
    this.known.set(s.id, s);
    let ids = this.byIdentity.get(s.identityId);
    if (!ids) this.byIdentity.set(s.identityId, (ids = new Set()));
    ids.add(s.id);
  }

  private forget(s: RouterApiSession): void {
    this.known.delete(s.id);
    this.unindex(s);
  }

  private unindex(s: RouterApiSession): void {
    const ids = this.byIdentity.get(s.identityId);
    ids?.delete(s.id);
    if (ids?.size === 0) this.byIdentity.delete(s.identityId);
  }

  /** Every live session, walked over auth's store a page at a time. */
  private async *walk(): AsyncGenerator<RouterApiSession[]> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.source.page(cursor, fullSyncChunk);
      yield page.sessions;
      if (page.next === null) return;
      cursor = page.next;
    }
  }

  /**
   * Sends `sessions` as one full synchronisation: chunks of 100 numbered from 0 under one
   * time-ordered sync id (a router takes a larger id as the newer sync), the last with `isLast`, even
   * when it is empty (the router waits for it); each chunk at the pace the router's socket takes.
   */
  private async sendFull(link: RouterLink, chunks: AsyncIterable<RouterApiSession[]>): Promise<void> {
    const id = cuid();
    let sequence = 0;
    // A full chunk waits until the next one begins, so the last one sent is the one marked last.
    let pending: RouterApiSession[] | undefined;
    let buffer: RouterApiSession[] = [];
    const send = async (sessions: RouterApiSession[], isLast: boolean) => {
      if (link.closed) return;
      await link.addApiSessions(sessions, { fullState: true, state: { id, isLast, sequence } });
      sequence++;
    };
    const shift = async () => {
      if (pending) await send(pending, false);
      pending = buffer;
      buffer = [];
    };
    for await (const chunk of chunks) {
      for (const s of chunk) {
        buffer.push(s);
        if (buffer.length === fullSyncChunk) await shift();
      }
      if (link.closed) return;
    }
    if (buffer.length > 0) await shift();
    await send(pending ?? [], true);
  }

  /** A freshly connected edge router gets every live session. */
  async fullSync(link: RouterLink): Promise<void> {
    const remembering = async function* (this: ApiSessionSync) {
      for await (const page of this.walk()) {
        for (const s of page) this.remember(s);
        yield page;
      }
    }.call(this);
    await this.sendFull(link, remembering);
  }

  /** auth signalled a session that opened. */
  opened(session: RouterApiSession): void {
    this.remember(session);
    const state = { id: cuid(), isLast: true, sequence: 0 };
    for (const link of this.edgeLinks())
      void link.addApiSessions([session], { fullState: false, state }).catch(() => undefined);
  }

  /** The certificates of these identities changed: their sessions' fingerprints change with them. */
  async identitiesChanged(identityIds: string[]): Promise<void> {
    const affected = identityIds.filter((id) => this.byIdentity.has(id));
    if (affected.length === 0) return;
    const sessions = await this.source.of(affected);
    for (const s of sessions) this.remember(s);
    if (sessions.length === 0) return;
    for (const link of this.edgeLinks()) link.updateApiSessions(sessions);
  }

  /** Sessions ended (logout, deletion, expiry, the identity disabled or deleted): every router drops them. */
  ended(ids: string[]): void {
    const tokens: string[] = [];
    for (const id of ids) {
      const s = this.known.get(id);
      if (!s) continue;
      this.forget(s);
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
    for (const s of sessions) this.remember(s);
    return this.known.get(apiSessionId);
  }

  /**
   * After signals or events may have been missed: what this replica knows is read anew from auth
   * (sessions that ended unseen are forgotten), and every connected edge router gets it in full.
   */
  async resyncAll(): Promise<void> {
    const all: RouterApiSession[] = [];
    for await (const page of this.walk()) all.push(...page);
    this.known.clear();
    this.byIdentity.clear();
    for (const s of all) this.remember(s);
    for (const link of this.edgeLinks()) {
      const chunks = (async function* () {
        for (let i = 0; i < all.length; i += fullSyncChunk) yield all.slice(i, i + fullSyncChunk);
      })();
      await this.sendFull(link, chunks).catch((err: unknown) =>
        this.logger.warn({ err, routerId: link.routerId }, 'the router could not be resynchronised'),
      );
    }
  }

  get size(): number {
    return this.known.size;
  }
}
