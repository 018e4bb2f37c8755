import { Redis } from 'ioredis';
import { type Logger, dependencyUnavailableError } from '@ziti/platform';
import type { CircuitRecord, CircuitStore } from './circuits.ports.ts';

/**
 * Circuits shared by every fabric replica, under `<prefix>fc:`:
 *   c:<id>       the circuit's JSON
 *   s:<session>  set of its session's circuit ids
 *   r:<router>   set of the ids of circuits crossing that router
 * Adds and removes are one script each, so the indexes never disagree with the circuits.
 */
const addScript = `
local p, id, json, session = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
redis.call('SET', p .. 'c:' .. id, json)
redis.call('SADD', p .. 's:' .. session, id)
for i = 5, #ARGV do redis.call('SADD', p .. 'r:' .. ARGV[i], id) end
return 1`;

const removeScript = `
local p, id = ARGV[1], ARGV[2]
local json = redis.call('GET', p .. 'c:' .. id)
if not json then return nil end
local c = cjson.decode(json)
redis.call('DEL', p .. 'c:' .. id)
redis.call('SREM', p .. 's:' .. c['sessionId'], id)
for _, r in ipairs(c['path']) do redis.call('SREM', p .. 'r:' .. r, id) end
return json`;

export class RedisCircuitStore implements CircuitStore {
  private readonly redis: Redis;
  private readonly p: string;

  constructor(url: string, prefix: string, logger?: Logger) {
    this.redis = new Redis(url, { maxRetriesPerRequest: 2, enableAutoPipelining: true });
    let down = false;
    this.redis.on('error', (err: Error) => {
      if (down) return;
      down = true;
      logger?.warn({ err }, 'redis is not available; circuits cannot be recorded until it is back');
    });
    this.redis.on('ready', () => {
      down = false;
    });
    this.redis.defineCommand('zitiCircuitAdd', { numberOfKeys: 0, lua: addScript });
    this.redis.defineCommand('zitiCircuitRemove', { numberOfKeys: 0, lua: removeScript });
    this.p = `${prefix}fc:`;
  }

  private async run<T>(command: Promise<T>): Promise<T> {
    try {
      return await command;
    } catch (err) {
      throw err instanceof Error && err.name !== 'ReplyError' ? dependencyUnavailableError('redis') : err;
    }
  }

  private script(name: string, ...args: string[]): Promise<unknown> {
    const fn = (this.redis as unknown as Record<string, (...a: string[]) => Promise<unknown>>)[name]!;
    return this.run(fn.call(this.redis, this.p, ...args));
  }

  async add(c: CircuitRecord): Promise<void> {
    await this.script('zitiCircuitAdd', c.id, JSON.stringify(c), c.sessionId, ...new Set(c.path));
  }

  async remove(id: string): Promise<CircuitRecord | null> {
    const json = (await this.script('zitiCircuitRemove', id)) as string | null;
    return json ? (JSON.parse(json) as CircuitRecord) : null;
  }

  async get(id: string): Promise<CircuitRecord | null> {
    const json = await this.run(this.redis.get(`${this.p}c:${id}`));
    return json ? (JSON.parse(json) as CircuitRecord) : null;
  }

  private async load(ids: string[]): Promise<CircuitRecord[]> {
    if (ids.length === 0) return [];
    const rows = await this.run(this.redis.mget(ids.map((id) => `${this.p}c:${id}`)));
    return rows.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as CircuitRecord);
  }

  async ofRouter(routerId: string): Promise<CircuitRecord[]> {
    return this.load(await this.run(this.redis.smembers(`${this.p}r:${routerId}`)));
  }

  async ofSessions(sessionIds: string[]): Promise<Map<string, CircuitRecord[]>> {
    const out = new Map<string, CircuitRecord[]>();
    for (const s of new Set(sessionIds)) {
      const circuits = await this.load(await this.run(this.redis.smembers(`${this.p}s:${s}`)));
      if (circuits.length > 0) out.set(s, circuits);
    }
    return out;
  }

  async count(): Promise<number> {
    let n = 0;
    let cursor = '0';
    do {
      const [next, keys] = await this.run(this.redis.scan(cursor, 'MATCH', `${this.p}c:*`, 'COUNT', 1000));
      cursor = next;
      n += keys.length;
    } while (cursor !== '0');
    return n;
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => undefined);
  }
}
