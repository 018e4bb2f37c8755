import { Redis } from 'ioredis';
import type { ApiSessionRecord, ApiSessionStore, LiveApiSession } from './api-session-store.ts';
import { liveSession } from './api-session-store.ts';

/**
 * Key layout (a contract between auth and gateway, docs/adr/0002):
 *   <prefix>as:tok:<token>      JSON record, expires after the session timeout, slid on use
 *   <prefix>as:id:<id>          the token, same expiry
 *   <prefix>as:ident:<identity> set of session ids (pruned when read)
 *   <prefix>as:all              set of all session ids (pruned when read)
 */
const touchScript = `
local v = redis.call('GET', KEYS[1])
if not v then return nil end
redis.call('EXPIRE', KEYS[1], ARGV[1])
local rec = cjson.decode(v)
redis.call('EXPIRE', ARGV[2] .. rec['id'], ARGV[1])
return v`;

export class RedisApiSessionStore implements ApiSessionStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix = 'ziti:',
  ) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true, lazyConnect: false });
    this.redis.defineCommand('zitiTouch', { numberOfKeys: 1, lua: touchScript });
  }

  private k(kind: string, value: string): string {
    return `${this.prefix}as:${kind}:${value}`;
  }

  async create(record: ApiSessionRecord, ttlSeconds: number): Promise<void> {
    await this.redis
      .multi()
      .set(this.k('tok', record.token), JSON.stringify(record), 'EX', ttlSeconds)
      .set(this.k('id', record.id), record.token, 'EX', ttlSeconds)
      .sadd(this.k('ident', record.identityId), record.id)
      .sadd(`${this.prefix}as:all`, record.id)
      .exec();
  }

  async touch(token: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const raw = (await (this.redis as unknown as { zitiTouch: (...a: unknown[]) => Promise<string | null> }).zitiTouch(
      this.k('tok', token),
      ttlSeconds,
      `${this.prefix}as:id:`,
    )) as string | null;
    if (!raw) return null;
    return liveSession(JSON.parse(raw) as ApiSessionRecord, ttlSeconds * 1000, ttlSeconds);
  }

  async getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const token = await this.redis.get(this.k('id', id));
    if (!token) return null;
    const [raw, pttl] = await Promise.all([
      this.redis.get(this.k('tok', token)),
      this.redis.pttl(this.k('tok', token)),
    ]);
    if (!raw) return null;
    return liveSession(JSON.parse(raw) as ApiSessionRecord, pttl, ttlSeconds);
  }

  async update(id: string, patch: Partial<ApiSessionRecord>, ttlSeconds: number): Promise<void> {
    const token = await this.redis.get(this.k('id', id));
    if (!token) return;
    const raw = await this.redis.get(this.k('tok', token));
    if (!raw) return;
    const record = { ...(JSON.parse(raw) as ApiSessionRecord), ...patch, id, token };
    await this.redis.set(this.k('tok', token), JSON.stringify(record), 'EX', ttlSeconds);
  }

  async delete(id: string): Promise<boolean> {
    const token = await this.redis.get(this.k('id', id));
    if (!token) return false;
    const raw = await this.redis.get(this.k('tok', token));
    const multi = this.redis.multi().del(this.k('tok', token)).del(this.k('id', id)).srem(`${this.prefix}as:all`, id);
    if (raw) multi.srem(this.k('ident', (JSON.parse(raw) as ApiSessionRecord).identityId), id);
    const results = await multi.exec();
    return (results?.[0]?.[1] as number) > 0;
  }

  async listIdsByIdentity(identityId: string): Promise<string[]> {
    const ids = await this.redis.smembers(this.k('ident', identityId));
    if (ids.length === 0) return [];
    const tokens = await this.redis.mget(ids.map((id) => this.k('id', id)));
    const dead = ids.filter((_, i) => !tokens[i]);
    if (dead.length > 0) await this.redis.srem(this.k('ident', identityId), ...dead);
    return ids.filter((_, i) => tokens[i]);
  }

  async deleteByIdentity(identityId: string): Promise<string[]> {
    const ids = await this.listIdsByIdentity(identityId);
    const deleted: string[] = [];
    for (const id of ids) if (await this.delete(id)) deleted.push(id);
    return deleted;
  }

  async listAll(ttlSeconds: number): Promise<LiveApiSession[]> {
    const ids = await this.redis.smembers(`${this.prefix}as:all`);
    const sessions: LiveApiSession[] = [];
    const dead: string[] = [];
    for (const id of ids) {
      const s = await this.getById(id, ttlSeconds);
      if (s) sessions.push(s);
      else dead.push(id);
    }
    if (dead.length > 0) await this.redis.srem(`${this.prefix}as:all`, ...dead);
    return sessions;
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
