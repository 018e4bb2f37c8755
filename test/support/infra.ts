import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * Real infrastructure for integration and end-to-end tests: the machine's Postgres, Redis and
 * NATS, addressed by environment (loopback defaults). Each run makes its own databases and uses
 * its own NATS namespace and Redis key prefix, so runs never see each other.
 */
export const infra = {
  postgresUrl: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
  redisUrl: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
  natsUrl: process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222',
};

export function uniqueName(prefix: string): string {
  return `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates a fresh database and returns its URL with a function that drops it. */
export async function createTestDatabase(
  prefix = 'zt',
): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = uniqueName(prefix).toLowerCase();
  const admin = new pg.Client({ connectionString: infra.postgresUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(infra.postgresUrl, name),
    name,
    drop: async () => {
      const c = new pg.Client({ connectionString: infra.postgresUrl });
      await c.connect();
      try {
        await c.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** Polls `check` until it returns a truthy value or the deadline passes. No fixed sleeps. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  what: string,
  timeoutMs = 15_000,
  everyMs = 50,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
}

/** A copy of `items` in random order (Fisher–Yates), for tests that deliver or race out of order. */
export function shuffle<T>(items: T[]): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}
