import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** What a hash thread computes: `hashRawSync(password, { ...options, salt })`. */
export interface RawHashJob {
  password: string;
  salt: Buffer;
  options: Record<string, number>;
}

/**
 * The hash threads' code. Each thread lowers its own scheduling priority (Linux `setpriority` on
 * its thread id, read from `/proc/thread-self`: raising one's nice value needs no privilege), says
 * which thread it is, then hashes one job at a time on its own thread with `hashRawSync`. Where the
 * priority cannot be changed (another OS), it hashes at normal priority.
 */
const threadCode = `
const { parentPort, workerData } = require('node:worker_threads');
const { readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const { hashRawSync } = require(workerData.argon2);
let tid = null;
try {
  tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (workerData.nice !== 0) setPriority(tid, workerData.nice);
} catch {}
parentPort.postMessage({ ready: true, tid });
parentPort.on('message', (job) => {
  try {
    const hash = hashRawSync(job.password, { ...job.options, salt: Buffer.from(job.salt) });
    parentPort.postMessage({ id: job.id, hash });
  } catch (err) {
    parentPort.postMessage({ id: job.id, error: String(err && err.message ? err.message : err) });
  }
});
`;

type Message = { ready: true; tid: number | null } | { id: number; hash?: Uint8Array; error?: string };

/**
 * A fixed set of low-priority threads for password hashes (docs/adr/0006), so a login storm's
 * hashing yields the CPU to everything else the machine runs: reads, the event loops, the bus.
 * Jobs queue for the next free thread; the caller bounds how many wait (`Argon2PasswordHasher`).
 * A thread that dies fails its job and is replaced; one that cannot even start (the native module
 * will not load) marks the set `broken`, and every hash, waiting or new, goes to `fallback`.
 */
export class Argon2Threads {
  private readonly idle: Worker[] = [];
  private readonly queue: { id: number; job: RawHashJob }[] = [];
  private readonly pending = new Map<number, { resolve: (hash: Buffer) => void; reject: (err: Error) => void }>();
  private readonly busy = new Map<Worker, number>();
  private readonly tids = new Set<number>();
  private readonly live = new Set<Worker>();
  private readonly argon2 = createRequire(import.meta.url).resolve('@node-rs/argon2');
  private nextId = 0;
  private closed = false;
  /** Set when a thread exited before it was ready: hashing here would never work. */
  broken = false;

  constructor(
    threads: number,
    private readonly nice: number,
    /** How to hash when the threads cannot start (libuv's pool). */
    private readonly fallback: (job: RawHashJob) => Promise<Buffer>,
  ) {
    for (let i = 0; i < threads; i++) this.spawn();
  }

  private spawn(): void {
    // No inherited Node options: the thread's code is plain CommonJS and needs no loader
    // (`--input-type=module` would even make it unloadable).
    const worker = new Worker(threadCode, {
      eval: true,
      execArgv: [],
      workerData: { argon2: this.argon2, nice: this.nice },
    });
    let ready = false;
    let tid: number | null = null;
    worker.on('message', (m: Message) => {
      if ('ready' in m) {
        ready = true;
        tid = m.tid;
        if (tid !== null) this.tids.add(tid);
        this.idle.push(worker);
        this.pump();
        return;
      }
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      this.busy.delete(worker);
      if (m.error !== undefined || !m.hash) p?.reject(new Error(m.error ?? 'no hash'));
      else p?.resolve(Buffer.from(m.hash));
      this.idle.push(worker);
      this.pump();
      this.holdProcess();
    });
    worker.on('error', () => undefined);
    this.live.add(worker);
    worker.on('exit', () => {
      this.live.delete(worker);
      if (tid !== null) this.tids.delete(tid);
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
      const id = this.busy.get(worker);
      this.busy.delete(worker);
      if (id !== undefined) {
        this.pending.get(id)?.reject(new Error('the hash thread exited'));
        this.pending.delete(id);
      }
      if (!this.closed && !ready) {
        this.broken = true;
        // What waits for a thread is hashed the fallback way instead.
        for (const { id: queued, job } of this.queue.splice(0)) {
          const p = this.pending.get(queued);
          this.pending.delete(queued);
          if (p) this.fallback(job).then(p.resolve, p.reject);
        }
      }
      if (!this.closed && ready) this.spawn();
      this.holdProcess();
    });
    this.holdProcess();
  }

  hash(job: RawHashJob): Promise<Buffer> {
    if (this.broken) return this.fallback(job);
    if (this.closed) return Promise.reject(new Error('the hash threads are closed'));
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.queue.push({ id, job });
      this.pump();
      this.holdProcess();
    });
  }

  /**
   * While a hash is asked for, the threads keep the process alive until it is answered; idle, they
   * do not (a process whose other work is done may exit). Set after the listeners: adding one
   * references a thread again.
   */
  private holdProcess(): void {
    const hold = this.pending.size > 0;
    for (const w of this.live)
      if (hold) w.ref();
      else w.unref();
  }

  private pump(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const worker = this.idle.shift()!;
      const { id, job } = this.queue.shift()!;
      this.busy.set(worker, id);
      worker.postMessage({ id, password: job.password, salt: job.salt, options: job.options });
    }
  }

  /** The OS thread ids of the running hash threads (Linux; for tests and diagnostics). */
  threadIds(): number[] {
    return [...this.tids];
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.idle, ...this.busy.keys()].map((w) => w.terminate()));
  }
}
