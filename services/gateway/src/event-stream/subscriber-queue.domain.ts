/**
 * What waits between the bus and one subscriber's socket: at most `maxMessages` messages and
 * `maxBytes` bytes. A push that would pass either bound is refused, and the subscriber is then
 * too slow to keep: the caller ends it (so its memory stays bounded and nobody else waits for it).
 */
export class SubscriberQueue {
  private readonly items: string[] = [];
  private head = 0;
  private queuedBytes = 0;

  constructor(
    readonly maxMessages: number,
    readonly maxBytes: number,
  ) {
    if (!(maxMessages >= 1) || !(maxBytes >= 1)) throw new Error('a subscriber queue holds at least one message');
  }

  get length(): number {
    return this.items.length - this.head;
  }

  get bytes(): number {
    return this.queuedBytes;
  }

  /**
   * Queues a message; false (and nothing queued) when it would pass a bound. `paced`: the caller
   * holds its source back once the queue is half full (a replay the reader asked for), so the few
   * messages already on their way are taken past the bounds rather than refused.
   */
  push(message: string, paced = false): boolean {
    const size = Buffer.byteLength(message);
    if (!paced && (this.length + 1 > this.maxMessages || this.queuedBytes + size > this.maxBytes)) return false;
    this.items.push(message);
    this.queuedBytes += size;
    return true;
  }

  /** The oldest message, removed; undefined when empty. */
  shift(): string | undefined {
    if (this.length === 0) return undefined;
    const message = this.items[this.head]!;
    this.items[this.head++] = '';
    this.queuedBytes -= Buffer.byteLength(message);
    if (this.head === this.items.length) {
      this.items.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items.splice(0, this.head);
      this.head = 0;
    }
    return message;
  }

  /** At or past half of either bound: a paced source should be held back. */
  get halfFull(): boolean {
    return this.length * 2 >= this.maxMessages || this.queuedBytes * 2 >= this.maxBytes;
  }

  clear(): void {
    this.items.length = 0;
    this.head = 0;
    this.queuedBytes = 0;
  }
}
