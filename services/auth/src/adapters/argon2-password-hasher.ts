import { randomBytes, timingSafeEqual } from 'node:crypto';
import { hashRaw } from '@node-rs/argon2';

/** argon2id in @node-rs/argon2's (const) Algorithm enum. */
const argon2id = 2;
import type { PasswordHasher } from '../domain/ports.ts';

/**
 * argon2id with the reference's parameters (time 1, 3 MiB, parallelism 4, 32-byte key, 10-byte salt;
 * hash and salt stored base64), so hashes move between the two systems (ZITI-FACTS §15). Hashing runs
 * on libuv's thread pool, never on the event loop, and at most `concurrency` at a time: every attempt
 * costs memory and four threads, so unbounded hashing is a denial-of-service lever.
 */
export class Argon2PasswordHasher implements PasswordHasher {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly concurrency = 4) {}

  private async withSlot<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  private derive(password: string, salt: Buffer): Promise<Buffer> {
    return this.withSlot(() =>
      hashRaw(password, { algorithm: argon2id, timeCost: 1, memoryCost: 3072, parallelism: 4, outputLen: 32, salt }),
    );
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

  async burn(password: string): Promise<void> {
    await this.derive(password, randomBytes(10));
  }

  /** Hashing slots in use and callers waiting (for tests and metrics). */
  load(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }
}
