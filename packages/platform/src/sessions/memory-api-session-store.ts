import type { ApiSessionRecord, ApiSessionStore, LiveApiSession } from './api-session-store.ts';
import { liveSession } from './api-session-store.ts';

/** The session store of `npm start`: one process, so a map with expiry times is the whole story. */
export class MemoryApiSessionStore implements ApiSessionStore {
  private readonly byToken = new Map<string, { record: ApiSessionRecord; expiresAt: number }>();
  private readonly tokenById = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  private live(token: string): { record: ApiSessionRecord; expiresAt: number } | undefined {
    const entry = this.byToken.get(token);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.byToken.delete(token);
      this.tokenById.delete(entry.record.id);
      return undefined;
    }
    return entry;
  }

  async create(record: ApiSessionRecord, ttlSeconds: number): Promise<void> {
    this.byToken.set(record.token, { record: { ...record }, expiresAt: this.now() + ttlSeconds * 1000 });
    this.tokenById.set(record.id, record.token);
  }

  async touch(token: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const entry = this.live(token);
    if (!entry) return null;
    entry.expiresAt = this.now() + ttlSeconds * 1000;
    return liveSession(entry.record, ttlSeconds * 1000, ttlSeconds, this.now());
  }

  async getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const token = this.tokenById.get(id);
    const entry = token ? this.live(token) : undefined;
    return entry ? liveSession(entry.record, entry.expiresAt - this.now(), ttlSeconds, this.now()) : null;
  }

  async update(id: string, patch: Partial<ApiSessionRecord>, _ttlSeconds: number): Promise<void> {
    const token = this.tokenById.get(id);
    const entry = token ? this.live(token) : undefined;
    if (entry) entry.record = { ...entry.record, ...patch, id: entry.record.id, token: entry.record.token };
  }

  async delete(id: string): Promise<boolean> {
    const token = this.tokenById.get(id);
    if (!token) return false;
    this.tokenById.delete(id);
    return this.byToken.delete(token);
  }

  async deleteByIdentity(identityId: string): Promise<string[]> {
    const ids = await this.listIdsByIdentity(identityId);
    for (const id of ids) await this.delete(id);
    return ids;
  }

  async listIdsByIdentity(identityId: string): Promise<string[]> {
    return [...this.byToken.keys()]
      .map((t) => this.live(t))
      .filter((e) => e && e.record.identityId === identityId)
      .map((e) => e!.record.id);
  }

  async listAll(ttlSeconds: number): Promise<LiveApiSession[]> {
    return [...this.byToken.keys()]
      .map((t) => this.live(t))
      .filter((e) => e !== undefined)
      .map((e) => liveSession(e.record, e.expiresAt - this.now(), ttlSeconds, this.now()));
  }

  async close(): Promise<void> {}
}
