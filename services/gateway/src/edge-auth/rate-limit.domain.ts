/**
 * A token bucket per key (the client address): `burst` requests at once, refilled at
 * `perMinute`. Used for the authentication operations, which cost a password hash, a signature
 * check or a TOTP guess each. The map is bounded: when full, the least recently used keys go
 * (a forgotten key starts with a full bucket, so eviction only ever errs towards allowing).
 */
export interface RateLimitConfig {
  /** Sustained requests per minute per key; 0 turns limiting off. */
  perMinute: number;
  /** Requests a key may make at once. */
  burst: number;
  /** Most keys remembered. */
  maxKeys?: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Seconds until the next request would be allowed (when refused). */
  retryAfterSeconds: number;
}

/**
 * What the pipeline asks of a rate limiter: a decision per key. The in-memory bucket below
 * answers at once; the shared one (Redis, every gateway replica counting together) over the network.
 */
export interface AuthRateLimiter {
  readonly enabled: boolean;
  take(key: string): RateDecision | Promise<RateDecision>;
  /** Releases what it holds (a connection). */
  close?(): Promise<void>;
}

export class TokenBucketLimiter implements AuthRateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly maxKeys: number;

  constructor(
    private readonly config: RateLimitConfig,
    private readonly now: () => number = Date.now,
  ) {
    this.maxKeys = config.maxKeys ?? 10_000;
  }

  get enabled(): boolean {
    return this.config.perMinute > 0;
  }

  take(key: string): RateDecision {
    if (!this.enabled) return { allowed: true, retryAfterSeconds: 0 };
    const now = this.now();
    const ratePerMs = this.config.perMinute / 60_000;
    const capacity = Math.max(1, this.config.burst);
    const previous = this.buckets.get(key);
    const tokens = previous ? Math.min(capacity, previous.tokens + (now - previous.at) * ratePerMs) : capacity;
    // Re-insert so the map's order is least recently used first.
    this.buckets.delete(key);
    if (tokens >= 1) {
      this.buckets.set(key, { tokens: tokens - 1, at: now });
      this.evict();
      return { allowed: true, retryAfterSeconds: 0 };
    }
    this.buckets.set(key, { tokens, at: now });
    this.evict();
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / ratePerMs / 1000)) };
  }

  private evict(): void {
    while (this.buckets.size > this.maxKeys) {
      const oldest = this.buckets.keys().next().value;
      if (oldest === undefined) return;
      this.buckets.delete(oldest);
    }
  }
}
