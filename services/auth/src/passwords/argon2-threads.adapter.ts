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

/** How long a hash thread may stay idle before it is retired (`Argon2Threads`' default). */
export const defaultIdleThreadMs = 60_000;

export interface Argon2ThreadsOptions {
  /** A thread idle this long is retired (ms; default `defaultIdleThreadMs`). */
  idleMs?: number;
}

/**
 * Low-priority threads for password hashes (docs/adr/0006), so a login storm's hashing yields the
 * CPU to everything else the machine runs: reads, the event loops, the bus. Threads start on
 * demand: none before the first hash, one more whenever a job waits and fewer than `threads` exist
 * (up to that limit), and a thread idle for `idleMs` is retired (each takes ~8 MiB: a service that
 * sees no login keeps none). Jobs queue for the next free thread; the caller bounds how many wait
 * (`Argon2PasswordHasher`). A thread that dies fails its job and is replaced; one that cannot even
 * start (the native module will not load) marks the set `broken`, and every hash, waiting or new,
 * goes to `fallback`.
 */
export class Argon2Threads {
  private readonly idle: Worker[] = [];
  private readonly queue: { id: number; job: RawHashJob }[] = [];
  private readonly pending = new Map<number, { resolve: (hash: Buffer) => void; reject: (err: Error) => void }>();
  private readonly busy = new Map<Worker, number>();
  /** Each ready thread's OS thread id (where it could read it). */
  private readonly tids = new Map<Worker, number>();
  /** Every thread not yet exited: starting, idle, busy or retiring. */
  private readonly live = new Set<Worker>();
  /** Threads started but not ready yet. */
  private readonly starting = new Set<Worker>();
  /** Idle threads told to stop (not counted against `threads`, never given a job). */
  private readonly retiring = new Set<Worker>();
  /** Each idle thread's retirement timer. */
  private readonly idleTimers = new Map<Worker, NodeJS.Timeout>();
  private readonly argon2 = createRequire(import.meta.url).resolve('@node-rs/argon2');
  private readonly idleMs: number;
  private nextId = 0;
  private peak = 0;
  private closed = false;
  /** Set when a thread exited before it was ready: hashing here would never work. */
  broken = false;

  constructor(
    private readonly threads: number,
    private readonly nice: number,
    /** How to hash when the threads cannot start (libuv's pool). */
    private readonly fallback: (job: RawHashJob) => Promise<Buffer>,
    options: Argon2ThreadsOptions = {},
  ) {
    this.idleMs = options.idleMs ?? defaultIdleThreadMs;
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
    this.live.add(worker);
    this.starting.add(worker);
    this.peak = Math.max(this.peak, this.threadCount());
    worker.on('message', (m: Message) => {
      if ('ready' in m) {
        ready = true;
        this.starting.delete(worker);
        if (m.tid !== null) this.tids.set(worker, m.tid);
        this.becomeIdle(worker);
        this.pump();
        return;
      }
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      this.busy.delete(worker);
      if (m.error !== undefined || !m.hash) p?.reject(new Error(m.error ?? 'no hash'));
      else p?.resolve(Buffer.from(m.hash));
      this.becomeIdle(worker);
      this.pump();
      this.holdProcess();
    });
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      const retired = this.retiring.delete(worker);
      this.live.delete(worker);
      this.starting.delete(worker);
      this.clearIdleTimer(worker);
      this.tids.delete(worker);
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
      // A thread that died is replaced; a retired one only if work came meanwhile (pump).
      if (!this.closed && ready && !retired) this.spawn();
      if (!this.closed && !this.broken) this.pump();
      this.holdProcess();
    });
    this.holdProcess();
  }

  /** A thread is free: it waits for a job, and is retired if none comes within `idleMs`. */
  private becomeIdle(worker: Worker): void {
    this.idle.push(worker);
    this.clearIdleTimer(worker);
    // Unref'd: an idle thread's timer never keeps the process alive.
    const timer = setTimeout(() => this.retire(worker), this.idleMs).unref();
    this.idleTimers.set(worker, timer);
  }

  private clearIdleTimer(worker: Worker): void {
    const timer = this.idleTimers.get(worker);
    if (timer !== undefined) clearTimeout(timer);
    this.idleTimers.delete(worker);
  }

  /** Stops a thread that stayed idle; a busy one (or one already gone) is left alone. */
  private retire(worker: Worker): void {
    this.idleTimers.delete(worker);
    const at = this.idle.indexOf(worker);
    if (this.closed || at < 0 || this.busy.has(worker)) return;
    this.idle.splice(at, 1);
    this.retiring.add(worker);
    this.tids.delete(worker);
    void worker.terminate();
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

  /**
   * Hands waiting jobs to idle threads; for jobs still waiting beyond the threads already starting,
   * starts more, up to `threads`.
   */
  private pump(): void {
    while (this.idle.length > 0 && this.queue.length > 0) {
      const worker = this.idle.shift()!;
      const { id, job } = this.queue.shift()!;
      this.clearIdleTimer(worker);
      this.busy.set(worker, id);
      worker.postMessage({ id, password: job.password, salt: job.salt, options: job.options });
    }
    while (!this.closed && !this.broken && this.queue.length > this.starting.size && this.threadCount() < this.threads)
      this.spawn();
  }

  /** Threads running or starting, not counting those being retired (for tests and diagnostics). */
  threadCount(): number {
    return this.live.size - this.retiring.size;
  }

  /** The most threads there ever were at once (for tests and diagnostics). */
  peakThreadCount(): number {
    return this.peak;
  }

  /** The OS thread ids of the running hash threads (Linux; for tests and diagnostics). */
  threadIds(): number[] {
    return [...this.tids.values()];
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const worker of [...this.idleTimers.keys()]) this.clearIdleTimer(worker);
    await Promise.all([...this.live].map((w) => w.terminate()));
  }
}
