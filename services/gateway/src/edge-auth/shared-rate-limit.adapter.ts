import { type Logger, metricsRegistry } from '@ziti/platform';
import { Redis } from 'ioredis';
import { Counter, Gauge } from 'prom-client';
import {
  type AuthRateLimiter,
  type RateDecision,
  type RateLimitConfig,
  TokenBucketLimiter,
} from './rate-limit.domain.ts';

/**
 * The token bucket of one key, taken atomically in Redis: every gateway replica draws from the
 * same bucket. Redis's clock (TIME) refills it, so the replicas' clocks do not matter; the key
 * expires once the bucket would be full again (an absent key is a full bucket), so Redis holds
 * only the addresses that called lately. KEYS[1]: the bucket; ARGV: per minute, burst. Answers
 * {allowed (0|1), milliseconds until the next token}.
 */
const takeScript = `
local per_ms = tonumber(ARGV[1]) / 60000
local capacity = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = capacity
if state[1] and state[2] then
  tokens = math.min(capacity, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * per_ms)
end
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = math.ceil((1 - tokens) / per_ms)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / per_ms) + 1000)
return {allowed, wait}`;

type TakeCommand = (key: string, perMinute: number, burst: number) => Promise<[number, number]>;

const series = (() => {
  let made: { shared: Gauge; local: Counter; refused: Counter } | undefined;
  return () =>
    (made ??= {
      shared: new Gauge({
        name: 'ziti_auth_rate_limit_shared',
        help: 'Whether the authentication rate limit is shared through Redis (1) or, Redis being unavailable, counted by this gateway replica alone (0)',
        registers: [metricsRegistry],
      }),
      local: new Counter({
        name: 'ziti_auth_rate_limit_local_decisions_total',
        help: 'Authentication attempts this gateway replica limited on its own because Redis was unavailable',
        registers: [metricsRegistry],
      }),
      refused: new Counter({
        name: 'ziti_auth_rate_limit_refused_total',
        help: 'Authentication attempts refused by the rate limit (429), by where the bucket was counted',
        labelNames: ['scope'],
        registers: [metricsRegistry],
      }),
    });
})();

export interface SharedRateLimiterOptions {
  /** `REDIS_URL`. */
  url: string;
  /** `REDIS_KEY_PREFIX`; buckets live under `<prefix>rl:auth:`. */
  keyPrefix: string;
  config: RateLimitConfig;
  logger: Logger;
  /** Longest a decision waits for Redis before this replica decides alone (default 500 ms). */
  commandTimeoutMs?: number;
  /** How long the replica decides alone after Redis failed, before it asks Redis again (default 2 s). */
  retryAfterMs?: number;
}

/**
 * The authentication rate limit shared by every gateway replica through Redis (one atomic script
 * per attempt), so N replicas allow the setting, not N times it. While Redis is unavailable (no
 * connection, or no answer within `commandTimeoutMs`) each replica falls back to its own in-memory
 * bucket: logged once when it happens and once when Redis is back, and shown by
 * `ziti_auth_rate_limit_shared`. After a failure Redis is asked again only after `retryAfterMs`,
 * so an outage costs no wait per attempt.
 */
export class SharedRateLimiter implements AuthRateLimiter {
  private readonly redis: Redis;
  private readonly local: TokenBucketLimiter;
  private readonly take_: TakeCommand;
  private readonly prefix: string;
  private readonly retryAfterMs: number;
  /** Deciding alone until this time (ms); 0 while Redis answers. */
  private aloneUntil = 0;
  private shared = true;
  /** Settles when the first connection is ready, or its first attempt failed. */
  private readonly firstConnection: Promise<void>;
  private everReady = false;
  private readonly commandTimeoutMs: number;

  constructor(private readonly options: SharedRateLimiterOptions) {
    this.local = new TokenBucketLimiter(options.config);
    this.prefix = `${options.keyPrefix}rl:auth:`;
    this.retryAfterMs = options.retryAfterMs ?? 2_000;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 500;
    this.redis = new Redis(options.url, {
      // A decision never waits for a lost connection to come back: without one it is taken here.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: this.commandTimeoutMs,
      enableAutoPipelining: true,
    });
    // The outage is logged by `take` (once); ioredis would otherwise report every reconnect attempt.
    this.redis.on('error', () => undefined);
    this.firstConnection = new Promise<void>((resolve) => {
      this.redis.once('ready', () => {
        this.everReady = true;
        resolve();
      });
      // Refused or failed: no use waiting for it any longer.
      this.redis.once('error', () => resolve());
      this.redis.once('end', () => resolve());
    });
    this.redis.defineCommand('zitiRateTake', { numberOfKeys: 1, lua: takeScript });
    this.take_ = (this.redis as unknown as { zitiRateTake: TakeCommand }).zitiRateTake.bind(this.redis);
    if (this.enabled) series().shared.set(1);
  }

  get enabled(): boolean {
    return this.options.config.perMinute > 0;
  }

  async take(key: string): Promise<RateDecision> {
    if (!this.enabled) return { allowed: true, retryAfterSeconds: 0 };
    if (this.aloneUntil === 0 || Date.now() >= this.aloneUntil) {
      try {
        // The first attempts may come while the first connection is being made: they wait for its
        // outcome (at most as long as a command would); a lost connection is not waited for.
        if (!this.everReady) await this.untilFirstConnection();
        const [allowed, waitMs] = await this.take_(
          this.prefix + key,
          this.options.config.perMinute,
          Math.max(1, this.options.config.burst),
        );
        if (!this.shared) {
          this.shared = true;
          series().shared.set(1);
          this.options.logger.info('redis is available again: the authentication rate limit is shared again');
        }
        this.aloneUntil = 0;
        if (allowed === 1) return { allowed: true, retryAfterSeconds: 0 };
        series().refused.inc({ scope: 'shared' });
        return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(Number(waitMs) / 1000)) };
      } catch (err) {
        this.aloneUntil = Date.now() + this.retryAfterMs;
        if (this.shared) {
          this.shared = false;
          series().shared.set(0);
          this.options.logger.warn(
            { err },
            'redis is not available for the authentication rate limit: each gateway replica limits on its own until it is back',
          );
        }
      }
    }
    series().local.inc();
    const decision = this.local.take(key);
    if (!decision.allowed) series().refused.inc({ scope: 'local' });
    return decision;
  }

  private async untilFirstConnection(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.firstConnection,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.commandTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
