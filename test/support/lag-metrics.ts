/**
 * Reading `ziti_event_consumer_lag_seconds` (an event's commit at its owner to its commit at a
 * consumer) from `/metrics` scrapes: the read-model lag tests of the cluster and of `npm start`.
 */

/** Cumulative counts by bucket bound of one consumer's lag histogram, for each scraped process. */
export type LagScrape = Map<string | number, Map<number, number>>;

/** One consumer's buckets in one `/metrics` text. */
export function lagBucketsIn(text: string, consumer: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('ziti_event_consumer_lag_seconds_bucket{') || !line.includes(`consumer="${consumer}"`))
      continue;
    const le = /le="([^"]+)"/.exec(line)![1]!;
    buckets.set(le === '+Inf' ? Infinity : Number(le), Number(line.split(' ').at(-1)));
  }
  return buckets;
}

/**
 * The smallest bucket bound under which at least 99 % of the events applied between two scrapes
 * fell, over the processes of the second (one that started meanwhile counts from 0; one that
 * stopped took its figures with it).
 */
export function p99Between(before: LagScrape, after: LagScrape): { p99: number; count: number } {
  const delta = new Map<number, number>();
  for (const [process, buckets] of after)
    for (const [le, n] of buckets) delta.set(le, (delta.get(le) ?? 0) + n - (before.get(process)?.get(le) ?? 0));
  const bounds = [...delta.keys()].sort((a, b) => a - b);
  const count = delta.get(Infinity) ?? 0;
  for (const le of bounds) if ((delta.get(le) ?? 0) >= 0.99 * count) return { p99: le, count };
  return { p99: Infinity, count };
}
