import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { infra, uniqueName, waitFor } from '../../../test/support/infra.ts';
import { createLogger } from '../src/logger.ts';
import {
  RedisApiSessionStore,
  redisPersistence,
  redisWithoutPersistence,
} from '../src/sessions/redis-api-session-store.ts';

/** A Redis whose `CONFIG GET` and `INFO` answer as given (the three ways it can keep data, or none). */
function configured(save: string, appendonly: string, replicas = 0, refuse = false): Redis {
  return {
    config: async (_: string, key: string) => {
      if (refuse) {
        const { ReplyError } = await import('ioredis');
        throw new ReplyError("ERR unknown command 'CONFIG'");
      }
      return [key, key === 'save' ? save : appendonly];
    },
    info: async () => `# Replication\r\nrole:master\r\nconnected_slaves:${replicas}\r\n`,
  } as unknown as Redis;
}

const stores: RedisApiSessionStore[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

describe('Redis persistence', () => {
  it('counts RDB snapshots, the append-only file and replicas as keeping the sessions', async () => {
    expect(await redisPersistence(configured('', 'no'))).toEqual({
      persists: false,
      snapshots: false,
      appendOnly: false,
      replicas: 0,
    });
    expect((await redisPersistence(configured('3600 1 300 100', 'no'))).persists).toBe(true);
    expect((await redisPersistence(configured('', 'yes'))).persists).toBe(true);
    expect((await redisPersistence(configured('', 'no', 2))).persists).toBe(true);
    expect(await redisPersistence(configured('', 'no', 0, true))).toEqual({ persists: undefined });
  });

  it('the store warns at start when the Redis it connects to keeps nothing over a restart', async () => {
    const lines: string[] = [];
    const logger = createLogger('persistence-test', 'info', { write: (line: string) => void lines.push(line) });
    // What the machine's Redis says of itself decides which line is right.
    const direct = new Redis(infra.redisUrl);
    const truth = await redisPersistence(direct);
    direct.disconnect();
    stores.push(
      new RedisApiSessionStore(infra.redisUrl, `${uniqueName('persist')}:`, { logger, reportPersistence: true }),
    );
    if (truth.persists === false) {
      const line = await waitFor(() => lines.find((l) => l.includes(redisWithoutPersistence)), 'the warning');
      expect(JSON.parse(line)).toMatchObject({ level: 40, msg: redisWithoutPersistence });
    } else {
      // Persisting (or not saying): no warning; wait for the check to have answered first.
      const own = new RedisApiSessionStore(infra.redisUrl, `${uniqueName('persist')}:`);
      stores.push(own);
      await own.persistence();
      expect(lines.filter((l) => JSON.parse(l).level >= 40)).toEqual([]);
    }
    // Without the option, nothing is asked.
    const quiet: string[] = [];
    const silent = new RedisApiSessionStore(infra.redisUrl, `${uniqueName('persist')}:`, {
      logger: createLogger('persistence-test', 'info', { write: (line: string) => void quiet.push(line) }),
    });
    stores.push(silent);
    await silent.countLive();
    expect(quiet).toEqual([]);
  });
});
