import type { IntegrityResult } from '@ziti/contracts';
import type { EntityReadModel } from './read-models.ports.ts';

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

/** One page of the owner's states, read at the owner's event `position`, covering ids in (`after`, `upTo`]. */
export interface OwnerPage {
  states: Record<string, unknown>[];
  position: number;
  after?: string;
  upTo?: string;
}

export interface ReconcileOptions<S extends { id: string }> {
  /** e.g. `service` — used in the descriptions. */
  entity: string;
  model: EntityReadModel<S>;
  /** The owner's states, page by page in bytewise id order. */
  ownerPages: AsyncIterable<OwnerPage>;
  /** The owner's state as the read model stores it, or null when it has an unknown shape. */
  parse: (raw: Record<string, unknown>) => S | null;
  fix: boolean;
  /** Stops after this many findings. */
  max?: number;
}

const chunk = 1000;

/**
 * Compares a read model with its owner's current states and, when fixing, applies the owner's
 * state at the page's position: missing and differing entities are written, entities the owner
 * no longer has become tombstones — each only over an older row, so a fix racing a newer event
 * never rolls the entity back. A row written at a newer position than the page is not drift (the
 * owner moved on after the page was read) and is left to the events.
 */
export async function reconcileReadModel<S extends { id: string; name?: string }>(
  o: ReconcileOptions<S>,
): Promise<IntegrityResult[]> {
  const results: IntegrityResult[] = [];
  const max = o.max ?? 1000;
  const label = (id: string, name?: unknown) => `${o.entity} ${id}${typeof name === 'string' ? ` (${name})` : ''}`;
  /** The stored row is newer than the owner's page: an event after the page, not drift. */
  const ahead = async (id: string, position: number) => ((await o.model.positionOf(id)) ?? 0) > position;
  /** Written, or overtaken meanwhile by a newer event (which is as good as a fix: the row is past the page). */
  const applied = async (state: S, position: number) =>
    (await o.model.apply(state, position, false)) || (await ahead(state.id, position));

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

  for await (const page of o.ownerPages) {
    const owned = new Map(page.states.map((s) => [String(s.id), s]));
    for (const row of await localRange(page.after, page.upTo)) {
      const ownerState = owned.get(row.id);
      owned.delete(row.id);
      if (await ahead(row.id, page.position)) continue;
      if (!ownerState) {
        const fixed =
          o.fix && ((await o.model.tombstone(row.id, page.position)) || (await ahead(row.id, page.position)));
        results.push({
          description: `${label(row.id, row.state.name)} is in the read model but its owner no longer has it`,
          fixed,
        });
      } else {
        const fields = differingFields(ownerState, row.state);
        if (fields.length > 0) {
          const parsed = o.parse(ownerState);
          const fixed = o.fix && parsed !== null && (await applied(parsed, page.position));
          results.push({
            description: `${label(row.id, ownerState.name)} differs from its owner in ${fields.join(', ')}`,
            fixed,
          });
        }
      }
      if (results.length >= max) return results;
    }
    for (const [id, ownerState] of owned) {
      if (await ahead(id, page.position)) continue;
      const parsed = o.parse(ownerState);
      const fixed = o.fix && parsed !== null && (await applied(parsed, page.position));
      results.push({ description: `${label(id, ownerState.name)} is missing from the read model`, fixed });
      if (results.length >= max) return results;
    }
  }
  return results;
}

/**
 * Applies one page of the owner's states during a resync: each state at the page's position, and
 * the live rows of the page's id range that the owner lacks become tombstones (both guarded).
 * Returns the states that could not be read (an owner newer than this build: left to the events).
 */
export async function applyOwnerPage<S extends { id: string }>(
  model: EntityReadModel<S>,
  page: OwnerPage,
  parse: (raw: Record<string, unknown>) => S | null,
): Promise<number> {
  let unreadable = 0;
  for (const raw of page.states) {
    const state = parse(raw);
    if (state) await model.apply(state, page.position, false);
    else unreadable++;
  }
  await tombstoneAbsentOf(model, page);
  return unreadable;
}

async function tombstoneAbsentOf<S extends { id: string }>(model: EntityReadModel<S>, page: OwnerPage): Promise<void> {
  await model.tombstoneAbsent(
    {
      ...(page.after === undefined ? {} : { after: page.after }),
      ...(page.upTo === undefined ? {} : { upTo: page.upTo }),
    },
    page.states.map((s) => String(s.id)),
    page.position,
  );
}
