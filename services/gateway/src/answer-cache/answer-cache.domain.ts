/**
 * The gateway's view of session-scoped answers (docs/adr/0015): the rendered `/current-identity`
 * of identities, kept by identity, so a repeated read costs no bus hop and no database read.
 *
 * An answer is kept only when its owner says which event positions it reflects (`reflects`:
 * source → position; the owner reads them before it reads the state, so the answer is at least
 * that new). It is dropped by every later event of those sources that concerns its identity
 * (`concerns`), and by events that concern every identity. A fill is refused when an event of
 * its identity newer than what it reflects was seen meanwhile (the answer was read before that
 * change), and a caller whose own writes (`after`) are newer than an answer is not served it.
 * Positions are per source and dense (docs/adr/0008), so all of this is order-independent.
 */

export interface AnswerCacheEvent {
  source: string;
  type: string;
  sequence: number;
  data: unknown;
}

/**
 * Which identity an event concerns: an identity id, `'all'` (every identity: e.g. an auth policy,
 * whose name every detail of its identities shows, or an event type this build does not know), or
 * undefined (none).
 */
export type Concerns = (event: AnswerCacheEvent) => string | 'all' | undefined;

interface Entry {
  text: string;
  reflects: Record<string, number>;
}

export interface AnswerCacheOptions {
  /** The sources whose positions answers reflect (e.g. auth, pki-enrollment). */
  sources: string[];
  concerns: Concerns;
  /** Most identities kept (the oldest fill goes first). */
  maxEntries: number;
  /** How long an identity's last change is remembered to refuse stale fills (longer than any request). */
  rememberMs?: number;
  now?: () => number;
}

export class AnswerCache {
  private readonly entries = new Map<string, Entry>();
  /** Per identity, the newest position per source of an event that concerned it, and when it was seen. */
  private readonly changed = new Map<string, { at: number; positions: Record<string, number> }>();
  /** Per source, the newest position of an event that concerned every identity. */
  private readonly floor: Record<string, number> = {};
  /** Per source, the last position seen (a gap means events were missed). */
  private readonly seen: Record<string, number> = {};
  /** Bumped by every reset: a fill begun before a reset is refused. */
  private epoch = 0;
  private live = false;
  private readonly rememberMs: number;
  private readonly now: () => number;

  constructor(private readonly o: AnswerCacheOptions) {
    this.rememberMs = o.rememberMs ?? 60_000;
    this.now = o.now ?? Date.now;
  }

  /** Whether it follows the events (until then nothing is kept or served). */
  get following(): boolean {
    return this.live;
  }

  start(): void {
    this.live = true;
  }

  /** The events may have been missed: forget everything, refuse fills begun before. */
  reset(): void {
    this.entries.clear();
    this.changed.clear();
    for (const s of Object.keys(this.seen)) delete this.seen[s];
    this.epoch++;
  }

  get size(): number {
    return this.entries.size;
  }

  /** A ticket taken before asking the owner: `fill` refuses it if a reset happened meanwhile. */
  ticket(): number {
    return this.epoch;
  }

  /** The kept answer of `identityId`, unless the caller's own writes are newer than it. */
  get(identityId: string, after: Record<string, number> | undefined): string | undefined {
    if (!this.live) return undefined;
    const entry = this.entries.get(identityId);
    if (!entry) return undefined;
    if (after) for (const s of this.o.sources) if ((after[s] ?? 0) > (entry.reflects[s] ?? 0)) return undefined;
    return entry.text;
  }

  /** Keeps an answer the owner read at `reflects`, unless a change it does not reflect was seen. */
  fill(identityId: string, text: string, reflects: Record<string, number>, ticket: number): boolean {
    if (!this.live || ticket !== this.epoch) return false;
    if (this.o.sources.some((s) => typeof reflects[s] !== 'number')) return false;
    const changed = this.changed.get(identityId)?.positions;
    for (const s of this.o.sources) {
      const at = reflects[s]!;
      if (at < (this.floor[s] ?? 0) || at < (changed?.[s] ?? 0)) return false;
    }
    const current = this.entries.get(identityId);
    if (current && this.o.sources.every((s) => (current.reflects[s] ?? 0) >= reflects[s]!)) return false;
    this.entries.delete(identityId);
    if (this.entries.size >= this.o.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(identityId, { text, reflects: { ...reflects } });
    return true;
  }

  /** Applies one event of a followed source. */
  apply(event: AnswerCacheEvent): void {
    const s = event.source;
    const p = event.sequence;
    if (!this.o.sources.includes(s) || !Number.isSafeInteger(p)) return;
    const last = this.seen[s];
    if (last !== undefined && p > last + 1) {
      // Positions are dense: a jump means events were missed.
      this.reset();
    }
    if (last === undefined || p > last) this.seen[s] = p;
    const who = this.o.concerns(event);
    if (who === undefined) return;
    if (who === 'all') {
      this.floor[s] = Math.max(this.floor[s] ?? 0, p);
      for (const [id, entry] of this.entries) if ((entry.reflects[s] ?? 0) < p) this.entries.delete(id);
      return;
    }
    const now = this.now();
    const known = this.changed.get(who);
    const positions = { ...(known?.positions ?? {}), [s]: Math.max(known?.positions[s] ?? 0, p) };
    this.changed.delete(who);
    this.changed.set(who, { at: now, positions });
    const entry = this.entries.get(who);
    if (entry && (entry.reflects[s] ?? 0) < p) this.entries.delete(who);
    this.forgetOldChanges(now);
  }

  /** Changes older than any request in flight cannot refuse a fill any more. */
  private forgetOldChanges(now: number): void {
    for (const [id, c] of this.changed) {
      if (now - c.at < this.rememberMs) break;
      this.changed.delete(id);
    }
  }
}
