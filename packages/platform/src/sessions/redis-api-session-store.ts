import { Redis, ReplyError } from 'ioredis';
import type { Logger } from '../logger.ts';
import { dependencyUnavailableError } from '../unavailable.ts';
import type {
  ApiSessionRecord,
  ApiSessionStore,
  EndedApiSession,
  LiveApiSession,
  TouchedApiSession,
} from './api-session-store.ts';
import { checkPositions, defaultEndGraceMs, liveSession } from './api-session-store.ts';

/**
 * Key layout (a contract between auth and gateway, docs/adr/0002), under `<prefix>as:`:
 *   tok:<token>      JSON record, expires after the session timeout, slid on use
 *   id:<id>          the token, same expiry
 *   pos:<id>         hash event source → position (read-your-writes), same expiry
 *   rec:<id>         hash: `r` the record JSON; once ended `end` (reason) and `at` (ms). No expiry:
 *                    kept until the end is announced (`forget`), so the sweeper knows whose session ended
 *   exp              sorted set of session ids by due time (ms): the expiry of a live session, the
 *                    grace end of a tombstone, the lease end of a claimed entry
 *   ident:<identity> set of session ids, live and ended-not-forgotten (pruned when read)
 *   all              set of live session ids (pruned when read)
 * Every script reads the clock with TIME, so replicas agree on due times whatever their clocks.
 */
const lib = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function end_one(p, id, reason, grace)
  local ik = p .. 'id:' .. id
  local token = redis.call('GET', ik)
  if not token then return nil end
  local tk = p .. 'tok:' .. token
  local rk = p .. 'rec:' .. id
  local json = redis.call('GET', tk) or redis.call('HGET', rk, 'r')
  if not json then
    redis.call('DEL', ik)
    return nil
  end
  local now = now_ms()
  redis.call('DEL', tk, ik, p .. 'pos:' .. id)
  redis.call('SREM', p .. 'all', id)
  redis.call('HSET', rk, 'r', json, 'end', reason, 'at', now)
  redis.call('SADD', p .. 'ident:' .. cjson.decode(json)['identityId'], id)
  redis.call('ZADD', p .. 'exp', now + grace, id)
  return json
end
`;

/** ARGV: prefix, id, token, identityId, json, ttl. */
const createScript = `${lib}
local p, id, ttl = ARGV[1], ARGV[2], tonumber(ARGV[6])
redis.call('SET', p .. 'tok:' .. ARGV[3], ARGV[5], 'EX', ttl)
redis.call('SET', p .. 'id:' .. id, ARGV[3], 'EX', ttl)
redis.call('DEL', p .. 'rec:' .. id)
redis.call('HSET', p .. 'rec:' .. id, 'r', ARGV[5])
redis.call('SADD', p .. 'ident:' .. ARGV[4], id)
redis.call('SADD', p .. 'all', id)
redis.call('ZADD', p .. 'exp', now_ms() + ttl * 1000, id)
return 1`;

/**
 * The gateway's check, one round trip: the record, its expiry slid (token, id, positions and the
 * expiry index together), and the positions recorded for it. ARGV: prefix, token, ttl.
 */
const touchScript = `${lib}
local p, ttl = ARGV[1], tonumber(ARGV[3])
local tk = p .. 'tok:' .. ARGV[2]
local v = redis.call('GET', tk)
if not v then return nil end
local id = cjson.decode(v)['id']
if redis.call('EXPIRE', p .. 'id:' .. id, ttl) == 0 then
  redis.call('DEL', tk)
  return nil
end
redis.call('EXPIRE', tk, ttl)
redis.call('EXPIRE', p .. 'pos:' .. id, ttl)
redis.call('ZADD', p .. 'exp', now_ms() + ttl * 1000, id)
return {v, redis.call('HGETALL', p .. 'pos:' .. id)}`;

/** Max-merge of positions. ARGV: prefix, id, ttl, then source, position pairs. */
const recordPositionsScript = `
local k = ARGV[1] .. 'pos:' .. ARGV[2]
for i = 4, #ARGV, 2 do
  local current = redis.call('HGET', k, ARGV[i])
  if (not current) or tonumber(ARGV[i + 1]) > tonumber(current) then
    redis.call('HSET', k, ARGV[i], ARGV[i + 1])
  end
end
redis.call('EXPIRE', k, ARGV[3])
return 1`;

/** Compare-and-set of a live record, its expiry kept. ARGV: prefix, id, expected JSON, new JSON. */
const updateScript = `
local p, id = ARGV[1], ARGV[2]
local token = redis.call('GET', p .. 'id:' .. id)
if not token then return 0 end
local tk = p .. 'tok:' .. token
local current = redis.call('GET', tk)
if not current then return 0 end
if current ~= ARGV[3] then return -1 end
redis.call('SET', tk, ARGV[4], 'KEEPTTL')
redis.call('HSET', p .. 'rec:' .. id, 'r', ARGV[4])
return 1`;

/** Removes everything of a session. ARGV: prefix, id. Answers 1 when it was live. */
const deleteScript = `
local p, id = ARGV[1], ARGV[2]
local token = redis.call('GET', p .. 'id:' .. id)
local json = redis.call('HGET', p .. 'rec:' .. id, 'r')
local live = 0
if token then
  json = redis.call('GET', p .. 'tok:' .. token) or json
  live = redis.call('DEL', p .. 'tok:' .. token)
end
redis.call('DEL', p .. 'id:' .. id, p .. 'rec:' .. id, p .. 'pos:' .. id)
redis.call('ZREM', p .. 'exp', id)
redis.call('SREM', p .. 'all', id)
if json then redis.call('SREM', p .. 'ident:' .. cjson.decode(json)['identityId'], id) end
return live`;

/** ARGV: prefix, id, reason, grace ms. */
const endScript = `${lib}
return end_one(ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]))`;

/**
 * ARGV: prefix, identityId, reason, grace ms, authenticator id ('' for every session of the
 * identity). A session made with another authenticator is left alone.
 */
const endByIdentityScript = `${lib}
local p, reason, only = ARGV[1], ARGV[3], ARGV[5]
local ik = p .. 'ident:' .. ARGV[2]
local out = {}
local function made_with(json)
  return only == '' or cjson.decode(json)['authenticatorId'] == only
end
for _, id in ipairs(redis.call('SMEMBERS', ik)) do
  local h = redis.call('HMGET', p .. 'rec:' .. id, 'r', 'end')
  local rec = h[1]
  if not rec then
    local token = redis.call('GET', p .. 'id:' .. id)
    if token then rec = redis.call('GET', p .. 'tok:' .. token) end
  end
  if not rec then
    redis.call('SREM', ik, id)
  elseif made_with(rec) then
    local json = nil
    if not h[2] then json = end_one(p, id, reason, tonumber(ARGV[4])) end
    if json then
      table.insert(out, json)
    elseif h[2] == reason then
      table.insert(out, rec)
    end
  end
end
return out`;

/**
 * Claims due entries for a lease: each is pushed to now + lease in the index, so concurrent
 * sweepers never get the same entry until the lease lapses. A live session found due (its key
 * was slid after the index was read) gets its index entry back in step instead. ARGV: prefix,
 * limit, lease ms. Answers [id, record JSON, reason or '', ended-at ms] per entry.
 */
const claimScript = `${lib}
local p = ARGV[1]
local now = now_ms()
local xk = p .. 'exp'
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', xk, '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
  local rk = p .. 'rec:' .. id
  local h = redis.call('HMGET', rk, 'r', 'end', 'at')
  local left = redis.call('PTTL', p .. 'id:' .. id)
  if left > 0 and not h[2] then
    redis.call('ZADD', xk, now + left, id)
  elseif not h[1] then
    redis.call('ZREM', xk, id)
    redis.call('SREM', p .. 'all', id)
  else
    local at = h[3]
    if not at then
      at = redis.call('ZSCORE', xk, id)
      redis.call('HSET', rk, 'at', at)
      redis.call('DEL', p .. 'tok:' .. cjson.decode(h[1])['token'], p .. 'id:' .. id)
    end
    redis.call('SREM', p .. 'all', id)
    redis.call('ZADD', xk, now + tonumber(ARGV[3]), id)
    table.insert(out, {id, h[1], h[2] or '', at})
  end
end
return out`;

/** ARGV: prefix, ids… */
const forgetScript = `
local p = ARGV[1]
for i = 2, #ARGV do
  local id = ARGV[i]
  if redis.call('EXISTS', p .. 'id:' .. id) == 0 then
    local rk = p .. 'rec:' .. id
    local json = redis.call('HGET', rk, 'r')
    if json then redis.call('SREM', p .. 'ident:' .. cjson.decode(json)['identityId'], id) end
    redis.call('DEL', rk, p .. 'pos:' .. id)
    redis.call('ZREM', p .. 'exp', id)
    redis.call('SREM', p .. 'all', id)
  end
end
return 1`;

/**
 * A Redis command whose failure (Redis down: `MaxRetriesPerRequestError`, a closed connection)
 * is the API's 503 SERVICE_UNAVAILABLE for whoever needed the session, never a 500.
 */
async function available<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (err) {
    if (err instanceof Error && !(err instanceof ReplyError)) throw dependencyUnavailableError('redis');
    throw err;
  }
}

type Script = (...args: (string | number)[]) => Promise<unknown>;
const scripts = {
  zitiAsCreate: createScript,
  zitiAsTouch: touchScript,
  zitiAsPositions: recordPositionsScript,
  zitiAsUpdate: updateScript,
  zitiAsDelete: deleteScript,
  zitiAsEnd: endScript,
  zitiAsEndByIdentity: endByIdentityScript,
  zitiAsClaim: claimScript,
  zitiAsForget: forgetScript,
} as const;

export interface RedisApiSessionStoreOptions {
  /** How long a tombstone waits for its `forget` before the sweeper announces it (default 30 s). */
  endGraceMs?: number;
  /** Where an outage of Redis is logged, once when it starts and once when it ends. */
  logger?: Logger;
  /**
   * Batch the commands issued in one event-loop turn into one write (ioredis auto-pipelining; the
   * default). Worth it where many requests touch sessions at once (the gateway); a process that
   * sends about one command per turn (auth: one per login) only pays for a pipeline per command.
   */
  autoPipelining?: boolean;
  /**
   * Once connected, check whether Redis keeps its data over a restart (RDB snapshots, AOF or a
   * replica) and warn on `logger` when it does not: every API session would be lost (issue 25).
   */
  reportPersistence?: boolean;
}

/** Whether a Redis keeps what it holds over a restart, as its own configuration says. */
export interface RedisPersistence {
  /** Undefined when Redis would not say (`CONFIG` refused, as some managed services do). */
  persists: boolean | undefined;
  /** RDB snapshots configured (`CONFIG GET save` not empty). */
  snapshots?: boolean;
  /** The append-only file is on (`CONFIG GET appendonly`). */
  appendOnly?: boolean;
  /** Replicas connected to it (`INFO replication`). */
  replicas?: number;
}

/** The warning the controller logs (and `doctor` prints) when Redis keeps nothing over a restart. */
export const redisWithoutPersistence =
  'Redis keeps no data over a restart (no RDB snapshots, no append-only file, no replica): every API session is lost when it restarts; turn on appendonly or save, or run replicas';

/** Asks a connected Redis whether it persists: `CONFIG GET save`, `CONFIG GET appendonly`, `INFO replication`. */
export async function redisPersistence(redis: Redis): Promise<RedisPersistence> {
  let save: string[];
  let aof: string[];
  try {
    [save, aof] = (await Promise.all([redis.config('GET', 'save'), redis.config('GET', 'appendonly')])) as [
      string[],
      string[],
    ];
  } catch (err) {
    if (err instanceof ReplyError) return { persists: undefined };
    throw err;
  }
  const info = await redis.info('replication').catch(() => '');
  const replicas = Number(/^connected_slaves:(\d+)/m.exec(info)?.[1] ?? 0);
  const snapshots = (save[1] ?? '').trim() !== '';
  const appendOnly = (aof[1] ?? 'no').trim().toLowerCase() === 'yes';
  return { persists: snapshots || appendOnly || replicas > 0, snapshots, appendOnly, replicas };
}

export class RedisApiSessionStore implements ApiSessionStore {
  private readonly redis: Redis;
  private readonly p: string;
  private readonly endGraceMs: number;

  constructor(url: string, prefix = 'ziti:', options: RedisApiSessionStoreOptions = {}) {
    this.redis = new Redis(url, {
      maxRetriesPerRequest: 2,
      enableAutoPipelining: options.autoPipelining ?? true,
      lazyConnect: false,
    });
    // Without a listener ioredis reports every failed reconnect as an unhandled error event.
    let down = false;
    this.redis.on('error', (err: Error) => {
      if (down) return;
      down = true;
      options.logger?.warn({ err }, 'redis is not available; API session requests answer 503 until it is back');
    });
    this.redis.on('ready', () => {
      if (!down) return;
      down = false;
      options.logger?.info('redis is available again');
    });
    if (options.reportPersistence && options.logger) {
      const logger = options.logger;
      this.redis.once('ready', () => {
        void this.persistence().then(
          (p) => {
            if (p.persists === false) logger.warn({ redis: p }, redisWithoutPersistence);
            else if (p.persists === undefined)
              logger.info(
                'could not ask Redis whether it persists (CONFIG refused): make sure it keeps API sessions over a restart',
              );
          },
          () => undefined,
        );
      });
    }
    for (const [name, lua] of Object.entries(scripts)) this.redis.defineCommand(name, { numberOfKeys: 0, lua });
    this.p = `${prefix}as:`;
    this.endGraceMs = options.endGraceMs ?? defaultEndGraceMs;
  }

  private run(name: keyof typeof scripts, ...args: (string | number)[]): Promise<unknown> {
    return available((this.redis as unknown as Record<string, Script>)[name]!(this.p, ...args));
  }

  private k(kind: string, value: string): string {
    return `${this.p}${kind}:${value}`;
  }

  async create(record: ApiSessionRecord, ttlSeconds: number): Promise<void> {
    await this.run('zitiAsCreate', record.id, record.token, record.identityId, JSON.stringify(record), ttlSeconds);
  }

  async touch(token: string, ttlSeconds: number): Promise<TouchedApiSession | null> {
    const found = (await this.run('zitiAsTouch', token, ttlSeconds)) as [string, string[]] | null;
    if (!found) return null;
    const [raw, flat] = found;
    const positions: Record<string, number> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) positions[flat[i]!] = Number(flat[i + 1]);
    return { ...liveSession(JSON.parse(raw) as ApiSessionRecord, ttlSeconds * 1000, ttlSeconds), positions };
  }

  async recordPositions(sessionId: string, positions: Record<string, number>, ttlSeconds: number): Promise<void> {
    const entries = checkPositions(positions);
    if (entries.length === 0) return;
    await this.run('zitiAsPositions', sessionId, ttlSeconds, ...entries.flatMap(([s, v]) => [s, String(v)]));
  }

  async getById(id: string, ttlSeconds: number): Promise<LiveApiSession | null> {
    const token = await available(this.redis.get(this.k('id', id)));
    if (!token) return null;
    const [raw, pttl] = await available(
      Promise.all([this.redis.get(this.k('tok', token)), this.redis.pttl(this.k('tok', token))]),
    );
    if (!raw) return null;
    return liveSession(JSON.parse(raw) as ApiSessionRecord, pttl, ttlSeconds);
  }

  /** Read, merge, compare-and-set: a concurrent rewrite or end makes it read again. */
  async update(id: string, patch: Partial<ApiSessionRecord>, _ttlSeconds: number): Promise<void> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const token = await available(this.redis.get(this.k('id', id)));
      if (!token) return;
      const raw = await available(this.redis.get(this.k('tok', token)));
      if (!raw) return;
      const record = { ...(JSON.parse(raw) as ApiSessionRecord), ...patch, id, token };
      const outcome = Number(await this.run('zitiAsUpdate', id, raw, JSON.stringify(record)));
      if (outcome >= 0) return;
    }
    throw new Error(`API session ${id} kept changing while being updated`);
  }

  async delete(id: string): Promise<boolean> {
    return Number(await this.run('zitiAsDelete', id)) > 0;
  }

  async deleteByIdentity(identityId: string): Promise<string[]> {
    const ids = await available(this.redis.smembers(this.k('ident', identityId)));
    const deleted: string[] = [];
    for (const id of ids) if (await this.delete(id)) deleted.push(id);
    return deleted;
  }

  async end(id: string, reason: string): Promise<ApiSessionRecord | null> {
    const json = (await this.run('zitiAsEnd', id, reason, this.endGraceMs)) as string | null;
    return json ? (JSON.parse(json) as ApiSessionRecord) : null;
  }

  async endByIdentity(identityId: string, reason: string, authenticatorId?: string): Promise<ApiSessionRecord[]> {
    const out = (await this.run(
      'zitiAsEndByIdentity',
      identityId,
      reason,
      this.endGraceMs,
      authenticatorId ?? '',
    )) as string[];
    return out.map((json) => JSON.parse(json) as ApiSessionRecord);
  }

  async claimEnded(limit: number, leaseMs: number): Promise<EndedApiSession[]> {
    const rows = (await this.run('zitiAsClaim', limit, leaseMs)) as [string, string, string, string][];
    return rows.map(([, json, reason, at]) => ({
      record: JSON.parse(json) as ApiSessionRecord,
      reason: reason === '' ? null : reason,
      endedAt: new Date(Number(at)).toISOString(),
    }));
  }

  async forget(ids: string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 500) await this.run('zitiAsForget', ...ids.slice(i, i + 500));
  }

  async identitiesWithSessions(identityIds: string[]): Promise<Set<string>> {
    const unique = [...new Set(identityIds)];
    if (unique.length === 0) return new Set();
    // One pipeline of the identities' session sets, then one MGET of whether those sessions live.
    const pipeline = this.redis.pipeline();
    for (const id of unique) pipeline.smembers(this.k('ident', id));
    const replies = (await available(pipeline.exec())) ?? [];
    const pairs: [string, string][] = [];
    replies.forEach(([err, members], i) => {
      if (err) throw err;
      for (const sessionId of members as string[]) pairs.push([unique[i]!, sessionId]);
    });
    if (pairs.length === 0) return new Set();
    const tokens = await available(this.redis.mget(pairs.map(([, sessionId]) => this.k('id', sessionId))));
    return new Set(pairs.filter((_, i) => tokens[i]).map(([identityId]) => identityId));
  }

  async listIdsByIdentity(identityId: string): Promise<string[]> {
    const ids = await available(this.redis.smembers(this.k('ident', identityId)));
    if (ids.length === 0) return [];
    const tokens = await available(this.redis.mget(ids.map((id) => this.k('id', id))));
    const ended = ids.filter((_, i) => !tokens[i]);
    if (ended.length > 0) {
      // Ended sessions stay listed until forgotten (endByIdentity answers them again); the rest go.
      const kept = await available(Promise.all(ended.map((id) => this.redis.exists(this.k('rec', id)))));
      const dead = ended.filter((_, i) => kept[i] === 0);
      if (dead.length > 0) await available(this.redis.srem(this.k('ident', identityId), ...dead));
    }
    return ids.filter((_, i) => tokens[i]);
  }

  async listAll(ttlSeconds: number): Promise<LiveApiSession[]> {
    const ids = await available(this.redis.smembers(`${this.p}all`));
    const sessions: LiveApiSession[] = [];
    const dead: string[] = [];
    for (const id of ids) {
      const s = await this.getById(id, ttlSeconds);
      if (s) sessions.push(s);
      else dead.push(id);
    }
    if (dead.length > 0) await available(this.redis.srem(`${this.p}all`, ...dead));
    return sessions;
  }

  async scanLive(
    cursor: string | undefined,
    count: number,
  ): Promise<{ records: ApiSessionRecord[]; cursor: string | null }> {
    const [next, ids] = await available(this.redis.sscan(`${this.p}all`, cursor ?? '0', 'COUNT', count));
    const records: ApiSessionRecord[] = [];
    if (ids.length > 0) {
      const tokens = await available(this.redis.mget(ids.map((id) => this.k('id', id))));
      const live = tokens.filter((t): t is string => t !== null);
      if (live.length > 0) {
        const raws = await available(this.redis.mget(live.map((t) => this.k('tok', t))));
        for (const raw of raws) if (raw) records.push(JSON.parse(raw) as ApiSessionRecord);
      }
    }
    return { records, cursor: next === '0' ? null : next };
  }

  /** Whether this Redis keeps the sessions over a restart (`redisPersistence`). */
  persistence(): Promise<RedisPersistence> {
    return redisPersistence(this.redis);
  }

  async countLive(): Promise<number> {
    return available(this.redis.scard(`${this.p}all`));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
