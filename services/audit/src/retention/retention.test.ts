import { describe, expect, it } from 'vitest';
import { RetentionSweeper, retentionCutoff } from './retention.domain.ts';
import type { RetentionStore } from './retention.ports.ts';

/** Records by time, deleted as the store port says (a batch of the oldest before the cutoff). */
function memoryStore(times: Date[]): RetentionStore & { left: () => Date[]; calls: number } {
  let records = [...times];
  let calls = 0;
  return {
    left: () => records,
    get calls() {
      return calls;
    },
    async deleteRecordsBefore(cutoff, limit) {
      calls++;
      const doomed = records
        .filter((t) => t < cutoff)
        .sort((a, b) => a.getTime() - b.getTime())
        .slice(0, limit);
      records = records.filter((t) => !doomed.includes(t));
      return doomed.length;
    },
    async pruneTombstones() {
      return 0;
    },
  };
}

const now = new Date('2026-06-01T00:00:00Z');
const daysAgo = (d: number) => new Date(now.getTime() - d * 86_400_000);

describe('RetentionSweeper', () => {
  it('deletes what is older than the retention, in batches, and keeps the rest', async () => {
    const old = Array.from({ length: 25 }, (_, i) => daysAgo(91 + i));
    const kept = [daysAgo(1), daysAgo(89), daysAgo(90 - 1 / 24)];
    const store = memoryStore([...old, ...kept]);
    const sweeper = new RetentionSweeper(store, { retentionDays: 90, batchSize: 10, now: () => now });
    expect(await sweeper.sweep()).toEqual({ records: 25, tombstones: 0 });
    expect(store.left()).toEqual(kept);
    expect(store.calls).toBe(3);
    // Idempotent: a second sweep (or another replica's) finds nothing.
    expect((await sweeper.sweep()).records).toBe(0);
  });

  it('computes the cutoff in whole days', () => {
    expect(retentionCutoff(now, 90).toISOString()).toBe('2026-03-03T00:00:00.000Z');
  });

  it('refuses a retention below a day', () => {
    expect(() => new RetentionSweeper(memoryStore([]), { retentionDays: 0 })).toThrow(/from 1/);
  });

  it('runs at start and stops cleanly; a failing sweep is reported, not thrown', async () => {
    const errors: unknown[] = [];
    let swept: unknown;
    const failing: RetentionStore = {
      deleteRecordsBefore: async () => {
        throw new Error('database down');
      },
      pruneTombstones: async () => 0,
    };
    const a = new RetentionSweeper(failing, { retentionDays: 1, onError: (e) => errors.push(e) });
    a.start();
    await a.stop();
    expect(errors).toHaveLength(1);
    const store = memoryStore([daysAgo(5)]);
    const b = new RetentionSweeper(store, { retentionDays: 1, now: () => now, onSwept: (r) => (swept = r) });
    b.start();
    await b.stop();
    expect(swept).toEqual({ records: 1, tombstones: 0 });
  });
});
