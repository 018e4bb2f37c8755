import type { IntegrityResult } from '@ziti/contracts';
import type { EntityReadModel } from './ports.ts';

/** JSON with object keys sorted, so states compare by content. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The top-level fields whose values differ. */
export function differingFields(a: Record<string, unknown>, b: Record<string, unknown>): string[] {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k]));
}

export interface ReconcileOptions<S extends { id: string }> {
  /** e.g. `service` — used in the descriptions. */
  entity: string;
  model: EntityReadModel<S>;
  /** The owner's states, page by page in bytewise id order. */
  ownerPages: AsyncIterable<Record<string, unknown>[]>;
  /** The owner's state as the read model stores it, or null when it has an unknown shape. */
  parse: (raw: Record<string, unknown>) => S | null;
  fix: boolean;
  /** Stops after this many findings. */
  max?: number;
}

const chunk = 1000;

/**
 * Compares a read model with its owner's current states and, when fixing, re-applies the owner's
 * state: missing and differing entities are overwritten, entities the owner no longer has become
 * tombstones. Both sides are walked in the same id order, one owner page at a time.
 */
export async function reconcileReadModel<S extends { id: string; name?: string }>(
  o: ReconcileOptions<S>,
): Promise<IntegrityResult[]> {
  const results: IntegrityResult[] = [];
  const max = o.max ?? 1000;
  const label = (id: string, name?: unknown) => `${o.entity} ${id}${typeof name === 'string' ? ` (${name})` : ''}`;

  const extra = async (id: string, state: Record<string, unknown>) => {
    if (o.fix) await o.model.tombstone(id);
    results.push({
      description: `${label(id, state.name)} is in the read model but its owner no longer has it`,
      fixed: o.fix,
    });
  };

  const localRange = async (after: string | undefined, upTo: string | undefined) => {
    const rows = [];
    let from = after;
    for (;;) {
      const batch = await o.model.liveRows(from, upTo, chunk);
      rows.push(...batch);
      if (batch.length < chunk) return rows;
      from = batch[batch.length - 1]!.id;
    }
  };

  let after: string | undefined;
  for await (const page of o.ownerPages) {
    if (page.length === 0) continue;
    const last = String(page[page.length - 1]!.id);
    const owned = new Map(page.map((s) => [String(s.id), s]));
    for (const row of await localRange(after, last)) {
      const ownerState = owned.get(row.id);
      if (!ownerState) {
        await extra(row.id, row.state);
      } else {
        owned.delete(row.id);
        const fields = differingFields(ownerState, row.state);
        if (fields.length > 0) {
          const parsed = o.parse(ownerState);
          if (o.fix && parsed) await o.model.overwrite(parsed);
          results.push({
            description: `${label(row.id, ownerState.name)} differs from its owner in ${fields.join(', ')}`,
            fixed: o.fix && parsed !== null,
          });
        }
      }
      if (results.length >= max) return results;
    }
    for (const [id, ownerState] of owned) {
      const parsed = o.parse(ownerState);
      if (o.fix && parsed) await o.model.overwrite(parsed);
      results.push({
        description: `${label(id, ownerState.name)} is missing from the read model`,
        fixed: o.fix && parsed !== null,
      });
      if (results.length >= max) return results;
    }
    after = last;
  }
  for (const row of await localRange(after, undefined)) {
    await extra(row.id, row.state);
    if (results.length >= max) break;
  }
  return results;
}
