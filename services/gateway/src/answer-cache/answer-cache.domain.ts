/**
 * The gateway's view of session-scoped answers (docs/adr/0015): rendered answers kept per identity
 * (one per key: `/current-identity` has one, a service list one per page and config types), so a
 * repeated read costs no bus hop and no database read.
 *
 * An answer is kept only when its owner says which event positions it reflects (`reflects`:
 * source → position; the owner reads them before it reads the state, so the answer is at least
 * that new). It is dropped by every later event of those sources that concerns its identity
 * (`concerns`), and by events that concern every identity. A fill is refused when an event of
 * its identity newer than what it reflects was seen meanwhile (the answer was read before that
 * change), when it reflects a position from before the events this gateway has followed without a
 * gap (an event it never saw may concern the answer), and a caller whose own writes (`after`) are
 * newer than an answer is not served it. Positions are per source and dense (docs/adr/0008), so all
 * of this is order-independent.
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
  /** Most identities kept (the identity filled least recently goes first). */
  maxEntries: number;
  /** Most characters of answers kept in all (the same eviction); unbounded when absent. */
  maxChars?: number;
  /** Most answers kept per identity (the oldest fill of its keys goes first); 16 when absent. */
  maxKeys?: number;
  /** How long an identity's last change is remembered to refuse stale fills (longer than any request). */
  rememberMs?: number;
  now?: () => number;
}

export class AnswerCache {
  /** Per identity, its answers by key; the map's order is the order of fills (oldest first). */
  private readonly entries = new Map<string, Map<string, Entry>>();
  private chars = 0;
  private answers = 0;
  /** Per identity, the newest position per source of an event that concerned it, and when it was seen. */
  private readonly changed = new Map<string, { at: number; positions: Record<string, number> }>();
  /** Per source, the newest position of an event that concerned every identity. */
  private readonly floor: Record<string, number> = {};
  /** Per source, the last position seen (a gap means events were missed). */
  private readonly seen: Record<string, number> = {};
  /**
   * Per source, the position from which on every event was seen: an answer reflecting less may
   * miss an event this gateway never saw. Set by `start` (the owners' positions once following)
   * and raised by a gap.
   */
  private readonly known: Record<string, number> = {};
  /** Bumped by every reset: a fill begun before a reset is refused. */
  private epoch = 0;
  private live = false;
  private readonly rememberMs: number;
  private readonly now: () => number;

  constructor(private readonly o: AnswerCacheOptions) {
    this.rememberMs = o.rememberMs ?? 60_000;
    this.now = o.now ?? Date.now;
  }

  /** The sources whose events it follows. */
  get sources(): readonly string[] {
    return this.o.sources;
  }

  /** Whether it follows the events (until then nothing is kept or served). */
  get following(): boolean {
    return this.live;
  }

  /**
   * Serves and keeps answers from now on. `positions`: each source's last position, read once its
   * events are followed (every later event is seen); a source left out is taken as followed from
   * its beginning (tests, and an in-process bus that delivers every event it publishes).
   */
  start(positions: Record<string, number> = {}): void {
    for (const s of this.o.sources) this.known[s] = Math.max(this.seen[s] ?? 0, positions[s] ?? 0);
    this.live = true;
  }

  /**
   * The events may have been missed: forget everything, refuse fills begun before. With `stop`,
   * nothing is kept or served until `start` says again from where every event is seen.
   */
  reset(stop = false): void {
    this.entries.clear();
    this.chars = 0;
    this.answers = 0;
    this.changed.clear();
    for (const s of Object.keys(this.seen)) delete this.seen[s];
    this.epoch++;
    if (stop) this.live = false;
  }

  /** Identities with a kept answer. */
  get size(): number {
    return this.entries.size;
  }

  /** Answers kept, over all identities and keys. */
  get count(): number {
    return this.answers;
  }

  /** Characters of the answers kept. */
  get characters(): number {
    return this.chars;
  }

  /** A ticket taken before asking the owner: `fill` refuses it if a reset happened meanwhile. */
  ticket(): number {
    return this.epoch;
  }

  /** The kept answer of `identityId` for `key`, unless the caller's own writes are newer than it. */
  get(identityId: string, after: Record<string, number> | undefined, key = ''): string | undefined {
    if (!this.live) return undefined;
    const entry = this.entries.get(identityId)?.get(key);
    if (!entry) return undefined;
    if (after) for (const s of this.o.sources) if ((after[s] ?? 0) > (entry.reflects[s] ?? 0)) return undefined;
    return entry.text;
  }

  /** Keeps an answer the owner read at `reflects`, unless a change it does not reflect was seen. */
  fill(identityId: string, text: string, reflects: Record<string, number>, ticket: number, key = ''): boolean {
    if (!this.live || ticket !== this.epoch) return false;
    if (this.o.sources.some((s) => typeof reflects[s] !== 'number')) return false;
    const changed = this.changed.get(identityId)?.positions;
    for (const s of this.o.sources) {
      const at = reflects[s]!;
      if (at < (this.known[s] ?? 0) || at < (this.floor[s] ?? 0) || at < (changed?.[s] ?? 0)) return false;
    }
    const answers = this.entries.get(identityId) ?? new Map<string, Entry>();
    const current = answers.get(key);
    if (current && this.o.sources.every((s) => (current.reflects[s] ?? 0) >= reflects[s]!)) return false;
    if (current) this.forget(answers, key, current);
    while (answers.size >= (this.o.maxKeys ?? 16)) {
      const [oldest, entry] = answers.entries().next().value!;
      this.forget(answers, oldest, entry);
    }
    this.entries.delete(identityId);
    answers.set(key, { text, reflects: { ...reflects } });
    this.entries.set(identityId, answers);
    this.chars += text.length;
    this.answers++;
    this.evict(identityId);
    return true;
  }

  /** Applies one event of a followed source. */
  apply(event: AnswerCacheEvent): void {
    const s = event.source;
    const p = event.sequence;
    if (!this.o.sources.includes(s) || !Number.isSafeInteger(p)) return;
    const last = this.seen[s];
    if (last !== undefined && p > last + 1) {
      // Positions are dense: a jump means events were missed; from this one on, all are seen.
      this.reset();
      this.known[s] = Math.max(this.known[s] ?? 0, p - 1);
    }
    if (last === undefined || p > last) this.seen[s] = p;
    const who = this.o.concerns(event);
    if (who === undefined) return;
    if (who === 'all') {
      this.floor[s] = Math.max(this.floor[s] ?? 0, p);
      for (const [id, answers] of this.entries) {
        for (const [key, entry] of answers) if ((entry.reflects[s] ?? 0) < p) this.forget(answers, key, entry);
        if (answers.size === 0) this.entries.delete(id);
      }
      return;
    }
    const now = this.now();
    const known = this.changed.get(who);
    const positions = { ...(known?.positions ?? {}), [s]: Math.max(known?.positions[s] ?? 0, p) };
    this.changed.delete(who);
    this.changed.set(who, { at: now, positions });
    const answers = this.entries.get(who);
    if (answers) {
      for (const [key, entry] of answers) if ((entry.reflects[s] ?? 0) < p) this.forget(answers, key, entry);
      if (answers.size === 0) this.entries.delete(who);
    }
    this.forgetOldChanges(now);
  }

  private forget(answers: Map<string, Entry>, key: string, entry: Entry): void {
    answers.delete(key);
    this.chars -= entry.text.length;
    this.answers--;
  }

  /** Drops the identities filled least recently while over a bound (never the one just filled). */
  private evict(keep: string): void {
    for (const [id, answers] of this.entries) {
      const over =
        this.entries.size > this.o.maxEntries || (this.o.maxChars !== undefined && this.chars > this.o.maxChars);
      if (!over || id === keep) break;
      for (const [key, entry] of answers) this.forget(answers, key, entry);
      this.entries.delete(id);
    }
  }

  /** Changes older than any request in flight cannot refuse a fill any more. */
  private forgetOldChanges(now: number): void {
    for (const [id, c] of this.changed) {
      if (now - c.at < this.rememberMs) break;
      this.changed.delete(id);
    }
  }
}
