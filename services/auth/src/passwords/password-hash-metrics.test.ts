import { metricsRegistry } from '@ziti/platform';
import { describe, expect, it } from 'vitest';
import { Argon2PasswordHasher } from './argon2-password-hasher.adapter.ts';

async function value(name: string, metricName = name): Promise<number | undefined> {
  const metric = metricsRegistry.getSingleMetric(name);
  if (!metric) return undefined;
  return (await metric.get()).values.find((v) => ((v as { metricName?: string }).metricName ?? name) === metricName)
    ?.value;
}

describe('password-hash queue metrics', () => {
  it('reports hashes running and waiting, refusals and the wait for a slot', async () => {
    const hasher = new Argon2PasswordHasher(1, 1);
    expect(await value('ziti_password_hash_running')).toBe(0);
    const first = hasher.hash('one');
    const second = hasher.hash('two');
    expect(await value('ziti_password_hash_running')).toBe(1);
    expect(await value('ziti_password_hash_queued')).toBe(1);
    await expect(hasher.hash('three')).rejects.toMatchObject({ code: 'SERVER_TOO_MANY_REQUESTS' });
    expect(await value('ziti_password_hash_rejected_total')).toBe(1);
    await Promise.all([first, second]);
    expect(await value('ziti_password_hash_running')).toBe(0);
    expect(await value('ziti_password_hash_queued')).toBe(0);
    expect(await value('ziti_password_hash_wait_seconds', 'ziti_password_hash_wait_seconds_count')).toBe(2);
    expect(hasher.load()).toMatchObject({ active: 0, waiting: 0, peak: 1 });
  });
});
