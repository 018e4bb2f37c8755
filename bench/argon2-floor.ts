/**
 * The floor of `npm run bench -- login`, run as its own process: raw `@node-rs/argon2` verifies
 * (derive with the stored salt + constant-time compare, what a password login costs) per second, at
 * most `concurrency` at a time like the auth service's hasher (ZITI_HASH_CONCURRENCY), for `seconds`
 * after a warm-up. The argon2 parameters are read from auth's hasher adapter so the two cannot drift.
 * Prints one JSON line: { verifiesPerSecond, p50, p99, operations, params, rssMiB }.
 * Usage: node --import tsx bench/argon2-floor.ts <concurrency> <seconds> [warmupSeconds]
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { hashRaw } from '@node-rs/argon2';

const adapter = new URL('../services/auth/src/passwords/argon2-password-hasher.adapter.ts', import.meta.url);

/** The parameters auth passes to hashRaw, read from its adapter. */
export function authArgon2Params(): {
  algorithm: number;
  timeCost: number;
  memoryCost: number;
  parallelism: number;
  outputLen: number;
  saltBytes: number;
} {
  const src = readFileSync(adapter, 'utf8');
  const num = (name: string) => {
    const m = new RegExp(`${name}:\\s*(\\d+)`).exec(src);
    if (!m) throw new Error(`argon2 floor: ${name} not found in ${adapter.pathname}`);
    return Number(m[1]);
  };
  const algorithm = /const argon2id = (\d+)/.exec(src);
  const salt = /randomBytes\((\d+)\)/.exec(src);
  if (!algorithm || !salt) throw new Error(`argon2 floor: algorithm or salt length not found in ${adapter.pathname}`);
  return {
    algorithm: Number(algorithm[1]),
    timeCost: num('timeCost'),
    memoryCost: num('memoryCost'),
    parallelism: num('parallelism'),
    outputLen: num('outputLen'),
    saltBytes: Number(salt[1]),
  };
}

async function main() {
  const concurrency = Number(process.argv[2] ?? 4);
  const seconds = Number(process.argv[3] ?? 10);
  const warmup = Number(process.argv[4] ?? 2);
  const { saltBytes, ...params } = authArgon2Params();
  const password = 'bench-password-0123456789';
  const salt = randomBytes(saltBytes);
  const expected = await hashRaw(password, { ...params, salt } as never);
  const verify = async () => {
    const actual = await hashRaw(password, { ...params, salt } as never);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  };
  const run = async (ms: number) => {
    const latencies: number[] = [];
    const end = performance.now() + ms;
    let failures = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          const t = performance.now();
          if (!(await verify())) failures++;
          latencies.push(performance.now() - t);
        }
      }),
    );
    return { latencies, failures };
  };
  if (warmup > 0) await run(warmup * 1000);
  const started = performance.now();
  const { latencies, failures } = await run(seconds * 1000);
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (p: number) =>
    +latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))]!.toFixed(2);
  process.stdout.write(
    `${JSON.stringify({
      verifiesPerSecond: Math.round(latencies.length / elapsed),
      p50: at(50),
      p99: at(99),
      operations: latencies.length,
      errors: failures,
      concurrency,
      params: { ...params, saltBytes },
      uvThreadpoolSize: process.env.UV_THREADPOOL_SIZE ?? 'default (4)',
      rssMiB: Math.round(process.memoryUsage().rss / 1024 / 1024),
    })}\n`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
