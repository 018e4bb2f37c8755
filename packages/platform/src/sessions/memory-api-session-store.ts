import type {
  ApiSessionRecord,
  ApiSessionStore,
  EndedApiSession,
  LiveApiSession,
  TouchedApiSession,
} from './api-session-store.ts';
import { checkPositions, defaultEndGraceMs, liveSession } from './api-session-store.ts';

interface Entry {
  record: ApiSessionRecord;
  /** The token still works (neither ended nor found expired). */
  live: boolean;
  expiresAt: number;
  /** When the entry is due for the sweeper: expiry, tombstone grace end or lease end. */
  dueAt: number;
  endReason: string | null;
  endedAt: number | null;
  positions: Map<string, number>;
  positionsExpireAt: number;
}

/**
 * The session store of `npm start`: one process, so maps with expiry times are the whole story.
 * It keeps the Redis store's semantics (tombstones, expiry index, claims with a lease).
 */
export class MemoryApiSessionStore implements ApiSessionStore {
  private readonly entries = new Map<string, Entry>();
  private readonly idByToken = new Map<string, string>();
  private readonly endGraceMs: number;

  constructor(
    private readonly now: () => number = Date.now,
    options: { endGraceMs?: number } = {},
  ) {
    this.endGraceMs = options.endGraceMs ?? defaultEndGraceMs;
  }

  /** The entry of a live session; an expired one stops being live (it waits for the sweeper). */
  private live(id: string | undefined): Entry | undefined {
    const entry = id === undefined ? undefined : this.entries.get(id);
    if (!entry || !entry.live) return undefined;
    if (entry.expiresAt <= this.now()) {
      entry.live = false;
      this.idByToken.delete(entry.record.token);
      return undefined;
    }
    return entry;
  }

  async create(record: ApiSessionRecord, ttlSeconds: number): Promise<void> {
    const expiresAt = this.now() + ttlSeconds * 1000;
    this.entries.set(record.id, {
      record: { ...record },
      live: true,
      expiresAt,
      dueAt: expiresAt,
      endReason: null,
      endedAt: null,
      positions: new Map(),
      positionsExpireAt: 0,
    });
    this.idByToken.set(record.token, record.id);
  }

  async touch(token: string, ttlSeconds: number): Promise<TouchedApiSession | null> {
    const entry = this.live(this.idByToken.get(token));
    if (!entry) return null;
    const now = this.now();
    entry.expiresAt = entry.dueAt = now + ttlSeconds * 1000;
    const positions = entry.positionsExpireAt > now ? Object.fromEntries(entry.positions) : {};
    if (entry.positionsExpireAt > now) entry.positionsExpireAt = entry.expiresAt;
    return { ...liveSession(entry.record, ttlSeconds * 1000, ttlSeconds, now), positions };
  }

  async recordPositions(sessionId: string, positions: Record<string, number>, ttlSeconds: number): Promise<void> {
    const entries = checkPositions(positions);
    const entry = this.entries.get(sessionId);
    if (!entry || entries.length === 0) return;
    const now = this.now();
    if (entry.positionsExpireAt <= now) entry.positions.clear();
    for (const [source, position] of entries) {
      if (!(position <= (entry.positions.get(source) ?? -1))) entry.positions.set(source, position);
    }
    entry.positionsExpireAt = now + ttlSeconds * 1000;
  }

  async getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const entry = this.live(id);
    return entry ? liveSession(entry.record, entry.expiresAt - this.now(), ttlSeconds, this.now()) : null;
  }

  async update(id: string, patch: Partial<ApiSessionRecord>, _ttlSeconds: number): Promise<void> {
    const entry = this.live(id);
    if (entry) entry.record = { ...entry.record, ...patch, id: entry.record.id, token: entry.record.token };
  }

  async delete(id: string): Promise<boolean> {
    const entry = this.entries.get(id);
    if (!entry) return false;
    const wasLive = this.live(id) !== undefined;
    this.entries.delete(id);
    this.idByToken.delete(entry.record.token);
    return wasLive;
  }

  async deleteByIdentity(identityId: string): Promise<string[]> {
    const deleted: string[] = [];
    for (const [id, entry] of [...this.entries]) {
      if (entry.record.identityId === identityId && (await this.delete(id))) deleted.push(id);
    }
    return deleted;
  }

  private endEntry(entry: Entry, reason: string): ApiSessionRecord {
    const now = this.now();
    entry.live = false;
    this.idByToken.delete(entry.record.token);
    entry.endReason = reason;
    entry.endedAt = now;
    entry.dueAt = now + this.endGraceMs;
    entry.positions.clear();
    return { ...entry.record };
  }

  async end(id: string, reason: string): Promise<ApiSessionRecord | null> {
    const entry = this.live(id);
    return entry ? this.endEntry(entry, reason) : null;
  }

  async endByIdentity(identityId: string, reason: string, authenticatorId?: string): Promise<ApiSessionRecord[]> {
    const out: ApiSessionRecord[] = [];
    for (const [id, entry] of this.entries) {
      if (entry.record.identityId !== identityId) continue;
      if (authenticatorId !== undefined && entry.record.authenticatorId !== authenticatorId) continue;
      if (this.live(id)) out.push(this.endEntry(entry, reason));
      else if (entry.endReason === reason) out.push({ ...entry.record });
    }
    return out;
  }

  async claimEnded(limit: number, leaseMs: number): Promise<EndedApiSession[]> {
    const now = this.now();
    const due = [...this.entries.values()].filter((e) => e.dueAt <= now).sort((a, b) => a.dueAt - b.dueAt);
    const claimed: EndedApiSession[] = [];
    for (const entry of due) {
      if (claimed.length >= limit) break;
      if (this.live(entry.record.id)) {
        entry.dueAt = entry.expiresAt;
        continue;
      }
      entry.endedAt ??= entry.expiresAt;
      entry.dueAt = now + leaseMs;
      claimed.push({
        record: { ...entry.record },
        reason: entry.endReason,
        endedAt: new Date(entry.endedAt).toISOString(),
      });
    }
    return claimed;
  }

  async forget(ids: string[]): Promise<void> {
    for (const id of ids) {
      const entry = this.entries.get(id);
      if (entry && !this.live(id)) this.entries.delete(id);
    }
  }

  async identitiesWithSessions(identityIds: string[]): Promise<Set<string>> {
    const wanted = new Set(identityIds);
    const out = new Set<string>();
    for (const id of this.entries.keys()) {
      const identityId = this.live(id)?.record.identityId;
      if (identityId !== undefined && wanted.has(identityId)) out.add(identityId);
    }
    return out;
  }

  async listIdsByIdentity(identityId: string): Promise<string[]> {
    return [...this.entries.keys()].filter((id) => this.live(id)?.record.identityId === identityId);
  }

  async listAll(ttlSeconds: number): Promise<LiveApiSession[]> {
    const now = this.now();
    return [...this.entries.keys()]
      .map((id) => this.live(id))
      .filter((e) => e !== undefined)
      .map((e) => liveSession(e.record, e.expiresAt - now, ttlSeconds, now));
  }

  async scanLive(
    cursor: string | undefined,
    count: number,
  ): Promise<{ records: ApiSessionRecord[]; cursor: string | null }> {
    // In id order after the cursor (the last id answered), so ends during the walk skip nothing.
    const ids = [...this.entries.keys()].filter((id) => cursor === undefined || id > cursor).sort();
    const records: ApiSessionRecord[] = [];
    let last: string | undefined;
    for (const id of ids) {
      if (records.length >= count) break;
      last = id;
      const entry = this.live(id);
      if (entry) records.push({ ...entry.record });
    }
    return { records, cursor: last !== undefined && ids.length > 0 && ids.at(-1) !== last ? last : null };
  }

  async countLive(): Promise<number> {
    const now = this.now();
    let live = 0;
    for (const entry of this.entries.values()) if (entry.live && entry.expiresAt > now) live++;
    return live;
  }

  async close(): Promise<void> {}
}
