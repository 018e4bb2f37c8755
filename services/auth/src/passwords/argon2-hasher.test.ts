import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashRaw } from '@node-rs/argon2';
import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { Argon2PasswordHasher } from './argon2-password-hasher.adapter.ts';
import { Argon2Threads } from './argon2-threads.adapter.ts';

/** Waits until `condition` holds, checking every 10 ms; fails after `ms`. */
async function until(condition: () => boolean, ms = 10_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not hold within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('argon2id hashing is bounded (ZITI-FACTS §15)', () => {
  it('never runs more than `concurrency` hashes at once, however many callers arrive', async () => {
    const hasher = new Argon2PasswordHasher(2, 100);
    const { hash, salt } = await hasher.hash('correct horse');
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) => hasher.verify(i % 2 ? 'correct horse' : 'wrong', hash, salt)),
    );
    expect(results.filter(Boolean)).toHaveLength(12);
    expect(hasher.load()).toEqual({ active: 0, waiting: 0, peak: 2 });
  });

  it('refuses at once with 429 SERVER_TOO_MANY_REQUESTS beyond the queue limit, and recovers', async () => {
    const hasher = new Argon2PasswordHasher(1, 2);
    const { hash, salt } = await hasher.hash('pw-12345');
    const outcomes = await Promise.allSettled(Array.from({ length: 6 }, () => hasher.verify('pw-12345', hash, salt)));
    const refused = outcomes.filter((o) => o.status === 'rejected');
    // One hashing, two waiting: the other three are refused without waiting.
    expect(refused).toHaveLength(3);
    for (const r of refused) {
      const err = (r as PromiseRejectedResult).reason as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      expect(err.code).toBe('SERVER_TOO_MANY_REQUESTS');
    }
    expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value === true)).toHaveLength(3);
    expect(hasher.load().peak).toBe(1);
    expect(await hasher.verify('pw-12345', hash, salt)).toBe(true);
  });

  it('hashes like the reference parameters: 32-byte key, 10-byte salt, base64', async () => {
    const hasher = new Argon2PasswordHasher();
    const { hash, salt } = await hasher.hash('admin');
    expect(Buffer.from(hash, 'base64')).toHaveLength(32);
    expect(Buffer.from(salt, 'base64')).toHaveLength(10);
    expect(await hasher.verify('admin', hash, salt)).toBe(true);
    expect(await hasher.verify('Admin', hash, salt)).toBe(false);
  });
});

describe('argon2id hashing yields the CPU (issue 13)', () => {
  const nice = (tid: number) => {
    // Field 19 of /proc/<pid>/task/<tid>/stat, counted after the command name's closing parenthesis.
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  };

  it.runIf(process.platform === 'linux')('hashes on threads of its own at the given nice value', async () => {
    const hasher = new Argon2PasswordHasher(3, 10, 17);
    await Promise.all([hasher.hash('warm-1'), hasher.hash('warm-2'), hasher.hash('warm-3')]);
    // Threads start in the background: wait (with a deadline) until all three have said who they are.
    const deadline = Date.now() + 10_000;
    while (hasher.hashThreads().threadIds().length < 3 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    const tids = hasher.hashThreads().threadIds();
    expect(tids).toHaveLength(3);
    expect(tids.map(nice)).toEqual([17, 17, 17]);
    // The event loop's own thread keeps its priority.
    expect(nice(process.pid)).toBe(0);
  });

  it('hashes on those threads exactly as the library does', async () => {
    const hasher = new Argon2PasswordHasher(2, 10);
    const { hash, salt } = await hasher.hash('same-everywhere');
    const direct = await hashRaw('same-everywhere', {
      algorithm: 2,
      timeCost: 1,
      memoryCost: 3072,
      parallelism: 4,
      outputLen: 32,
      salt: Buffer.from(salt, 'base64'),
    });
    expect(Buffer.from(hash, 'base64').equals(direct)).toBe(true);
    expect(hasher.hashThreads().broken).toBe(false);
  });

  it('keeps a process alive while a hash is asked for, and lets it exit once idle (whatever its Node options)', () => {
    const adapter = fileURLToPath(new URL('./argon2-password-hasher.adapter.ts', import.meta.url));
    const script = `import { Argon2PasswordHasher } from ${JSON.stringify(adapter)};
      const h = new Argon2PasswordHasher(2, 10);
      const r = await h.hash('x');
      console.log('hashed', r.hash.length, h.hashThreads().broken);`;
    // --input-type=module is inherited by threads that do not reset their options, and breaks them.
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('hashed 44 false');
  });
});

describe('argon2id hash threads start on demand and retire when idle (issue 25)', () => {
  const options = { algorithm: 2, timeCost: 1, memoryCost: 3072, parallelism: 4, outputLen: 32 };
  const direct = (password: string, salt: Buffer, opts: Record<string, number> = options) =>
    hashRaw(password, { ...opts, salt });

  it('starts no thread before the first hash', async () => {
    const hasher = new Argon2PasswordHasher(4, 10);
    expect(hasher.hashThreads().threadCount()).toBe(0);
    expect(hasher.hashThreads().threadIds()).toEqual([]);
    const { hash, salt } = await hasher.hash('first');
    // One hash asked for, one thread started for it.
    expect(hasher.hashThreads().threadCount()).toBe(1);
    expect(hasher.hashThreads().peakThreadCount()).toBe(1);
    expect(await hasher.verify('first', hash, salt)).toBe(true);
    expect(hasher.hashThreads().threadCount()).toBe(1);
  });

  it('grows with concurrent hashes up to the limit and never beyond', async () => {
    const hasher = new Argon2PasswordHasher(3, 100);
    const { hash, salt } = await hasher.hash('grow');
    let most = 0;
    const watching = setInterval(() => (most = Math.max(most, hasher.hashThreads().threadCount())), 1);
    try {
      const results = await Promise.all(Array.from({ length: 30 }, () => hasher.verify('grow', hash, salt)));
      expect(results.every(Boolean)).toBe(true);
    } finally {
      clearInterval(watching);
    }
    expect(hasher.hashThreads().threadCount()).toBe(3);
    expect(hasher.hashThreads().peakThreadCount()).toBe(3);
    expect(most).toBeLessThanOrEqual(3);
  });

  it('never starts more threads than its limit, however many jobs wait', async () => {
    const threads = new Argon2Threads(2, 0, () => Promise.reject(new Error('no fallback expected')));
    try {
      const salts = Array.from({ length: 12 }, (_, i) => Buffer.alloc(10, i));
      const hashes = await Promise.all(salts.map((salt) => threads.hash({ password: 'many', salt, options })));
      expect(threads.peakThreadCount()).toBe(2);
      expect(threads.threadCount()).toBe(2);
      for (const [i, h] of hashes.entries()) expect(h.equals(await direct('many', salts[i]!))).toBe(true);
    } finally {
      await threads.close();
    }
  });

  it('retires threads that stayed idle, and starts one again for the next hash', async () => {
    const hasher = new Argon2PasswordHasher(2, 10, 0, { idleThreadMs: 200 });
    const [a, b] = await Promise.all([hasher.hash('one'), hasher.hash('two')]);
    expect(hasher.hashThreads().peakThreadCount()).toBe(2);
    await until(() => hasher.hashThreads().threadCount() === 0, 10_000, 'retiring both idle threads');
    expect(hasher.hashThreads().threadIds()).toEqual([]);
    expect(await hasher.verify('one', a.hash, a.salt)).toBe(true);
    expect(hasher.hashThreads().threadCount()).toBe(1);
    expect(await hasher.verify('two', b.hash, b.salt)).toBe(true);
    await until(() => hasher.hashThreads().threadCount() === 0, 10_000, 'retiring the idle thread again');
    expect(hasher.hashThreads().broken).toBe(false);
  });

  it('never retires a busy thread, however long its hash takes', async () => {
    const threads = new Argon2Threads(1, 0, () => Promise.reject(new Error('no fallback expected')), { idleMs: 20 });
    try {
      await threads.hash({ password: 'warm', salt: Buffer.alloc(10, 1), options });
      // A hash far longer than the idle period (64 MiB, 3 passes): the thread must stay until it answers.
      const slow = { ...options, memoryCost: 65_536, timeCost: 3 };
      const salt = Buffer.alloc(10, 2);
      let answered = false;
      let lowest = Infinity;
      const job = threads.hash({ password: 'slow', salt, options: slow }).finally(() => (answered = true));
      const started = Date.now();
      while (!answered) {
        lowest = Math.min(lowest, threads.threadCount());
        await new Promise((r) => setTimeout(r, 5));
      }
      const hash = await job;
      expect(Date.now() - started).toBeGreaterThan(20);
      expect(lowest).toBe(1);
      expect(hash.equals(await direct('slow', salt, slow))).toBe(true);
      await until(() => threads.threadCount() === 0, 10_000, 'retiring the thread once idle');
    } finally {
      await threads.close();
    }
  });
});
