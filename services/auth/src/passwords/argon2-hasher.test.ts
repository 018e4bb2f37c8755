import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashRaw } from '@node-rs/argon2';
import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { Argon2PasswordHasher } from './argon2-password-hasher.adapter.ts';

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
