import { redactField } from './redaction.domain.ts';

export type EntityStateValue = Record<string, unknown>;

/** One changed field: its value before and after (null where it had none). */
export interface FieldChange {
  before: unknown;
  after: unknown;
}

/** JSON text with object keys sorted, so two equal values compare equal whatever their key order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * Each top-level field whose value differs between two states (null for a state that is not there: a
 * creation's before, a deletion's after), with its values as the trail may store them: a secret field
 * only says that it changed (`[redacted]`), certificates appear as fingerprints. Fields in key order.
 */
export function diffStates(
  before: EntityStateValue | null,
  after: EntityStateValue | null,
): Record<string, FieldChange> {
  const names = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].sort();
  const changes: Record<string, FieldChange> = {};
  for (const name of names) {
    const b = before?.[name] ?? null;
    const a = after?.[name] ?? null;
    if (canonicalJson(b) === canonicalJson(a)) continue;
    changes[name] = { before: redactField(name, b), after: redactField(name, a) };
  }
  return changes;
}
