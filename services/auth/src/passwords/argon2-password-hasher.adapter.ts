import { randomBytes, timingSafeEqual } from 'node:crypto';
import { hashRaw } from '@node-rs/argon2';
import { ApiError } from '@ziti/contracts';
import { passwordHashMetrics } from '@ziti/platform';
import type { PasswordHasher } from './passwords.ports.ts';
import { Argon2Threads } from './argon2-threads.adapter.ts';

/** argon2id in @node-rs/argon2's (const) Algorithm enum. */
const argon2id = 2;

/**
 * argon2id with the reference's parameters (time 1, 3 MiB, parallelism 4, 32-byte key, 10-byte salt;
 * hash and salt stored base64), so hashes move between the two systems (ZITI-FACTS §15). Hashing runs
 * on threads of its own at a lowered scheduling priority (`Argon2Threads`: started when hashes wait,
 * retired when idle), never on the event loop,
 * so a login storm cannot starve reads of the CPU, and at most `concurrency` at a time: every attempt
 * costs memory and CPU, so unbounded hashing is a denial-of-service lever. Callers wait
 * for a slot in a queue of at most `queueLimit`; beyond it the request is refused at once with
 * 429 SERVER_TOO_MANY_REQUESTS (the reference's answer when its authentication limiter is full)
 * instead of piling up memory and latency.
 */
export class Argon2PasswordHasher implements PasswordHasher {
  private active = 0;
  private peak = 0;
  private readonly waiting: (() => void)[] = [];
  /** The process's hash-queue series (shared by every hasher of the process: they add up). */
  private readonly metrics = passwordHashMetrics();

  private readonly threads: Argon2Threads;

  constructor(
    private readonly concurrency = 4,
    private readonly queueLimit = 256,
    /** The hash threads' nice value (0: normal priority … 19: the lowest; docs/adr/0006). */
    nice = 5,
    /** `idleThreadMs`: a hash thread idle this long is retired (default 60 s; tests shorten it). */
    options: { idleThreadMs?: number } = {},
  ) {
    this.threads = new Argon2Threads(
      concurrency,
      nice,
      (job) => hashRaw(job.password, { ...job.options, salt: job.salt }),
      options.idleThreadMs !== undefined ? { idleMs: options.idleThreadMs } : {},
    );
  }

  /**
   * A semaphore: a finishing caller hands its slot straight to the first waiter, so a newcomer can
   * never slip in between and push the number of hashes above `concurrency`.
   */
  private async withSlot<T>(fn: () => Promise<T>): Promise<T> {
    const waitTimer = this.metrics.waitSeconds.startTimer();
    if (this.active < this.concurrency) {
      this.active++;
      this.peak = Math.max(this.peak, this.active);
      this.metrics.running.inc();
    } else {
      if (this.waiting.length >= this.queueLimit) {
        this.metrics.rejected.inc();
        throw new ApiError('SERVER_TOO_MANY_REQUESTS', {
          code: 'RATE_LIMITED',
          message: 'too many password checks in progress, retry later',
        });
      }
      // The slot is handed over with `active` unchanged.
      this.metrics.queued.inc();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
      this.metrics.queued.dec();
    }
    waitTimer();
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else {
        this.active--;
        this.metrics.running.dec();
      }
    }
  }

  private derive(password: string, salt: Buffer): Promise<Buffer> {
    const options = { algorithm: argon2id, timeCost: 1, memoryCost: 3072, parallelism: 4, outputLen: 32 };
    return this.withSlot(() => this.threads.hash({ password, salt, options }));
  }

  async hash(password: string): Promise<{ hash: string; salt: string }> {
    const salt = randomBytes(10);
    return { hash: (await this.derive(password, salt)).toString('base64'), salt: salt.toString('base64') };
  }

  async verify(password: string, hash: string, salt: string): Promise<boolean> {
    const expected = Buffer.from(hash, 'base64');
    const actual = await this.derive(password, Buffer.from(salt, 'base64'));
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }

  /** The hash threads (for tests and diagnostics). */
  hashThreads(): Pick<Argon2Threads, 'threadIds' | 'threadCount' | 'peakThreadCount' | 'broken'> {
    return this.threads;
  }

  /** Hashing slots in use, callers waiting and the most slots ever in use (for tests and metrics). */
  load(): { active: number; waiting: number; peak: number } {
    return { active: this.active, waiting: this.waiting.length, peak: this.peak };
  }
}
