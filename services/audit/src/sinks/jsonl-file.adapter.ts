import { type FileHandle, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { syncDirectory } from './checkpoint-file.adapter.ts';
import { feedPosition } from './sinks.domain.ts';
import type { DeliveryOutcome, SinkCheckpoint, SinkItem, SinkOutput } from './sinks.ports.ts';

/** What the file's end says: the position of its last line, and whether a torn last line was cut off. */
export interface FileTail {
  position?: number;
  /** A last line without its newline (a crash mid-write) was removed. */
  repaired: boolean;
  /** The last line is not one of ours (edited by hand?): the checkpoint alone counts. */
  unreadable?: boolean;
}

/**
 * The JSON-lines file: one event per line, appended and synced to disk per batch (one write of the
 * whole batch, then fsync; a failed write is cut back to where it started). The file is created
 * private to the process owner (0600; an existing file keeps its mode), in a directory created 0700
 * if missing. It is opened per batch, so a file moved away by log rotation is created again.
 */
export class JsonlFileOutput implements SinkOutput {
  constructor(readonly path: string) {}

  async deliver(items: readonly SinkItem[]): Promise<DeliveryOutcome> {
    if (items.length === 0) return { delivered: 0 };
    const text = items.map((i) => `${i.body}\n`).join('');
    let handle: FileHandle | undefined;
    try {
      const dir = dirname(this.path);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      let created = false;
      try {
        handle = await open(this.path, 'ax', 0o600);
        created = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        handle = await open(this.path, 'a', 0o600);
      }
      const { size } = await handle.stat();
      try {
        await handle.writeFile(text);
        await handle.sync();
      } catch (err) {
        await handle.truncate(size).catch(() => undefined);
        throw err;
      }
      if (created) await syncDirectory(dir);
      return { delivered: items.length };
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      return { delivered: 0, failure: { reason: 'io', message: e.code ?? e.message } };
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  /**
   * The position of the file's last line (its `feedId`), after cutting off a torn last line: a
   * crash between the write and the acknowledgement leaves the line in the file and the event on
   * the bus, and this is how the sink knows not to write it twice.
   */
  async tail(): Promise<FileTail> {
    let handle: FileHandle;
    try {
      handle = await open(this.path, 'r+');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { repaired: false };
      throw err;
    }
    try {
      const { size } = await handle.stat();
      if (size === 0) return { repaired: false };
      let end = size;
      let repaired = false;
      if ((await readByte(handle, size - 1)) !== 0x0a) {
        end = (await lastNewline(handle, size)) + 1;
        await handle.truncate(end);
        await handle.sync();
        repaired = true;
      }
      if (end === 0) return { repaired };
      const start = (await lastNewline(handle, end - 1)) + 1;
      const line = Buffer.alloc(end - 1 - start);
      await handle.read(line, 0, line.length, start);
      let position: number | undefined;
      try {
        position = feedPosition((JSON.parse(line.toString('utf8')) as { feedId?: unknown }).feedId);
      } catch {
        position = undefined;
      }
      return position === undefined ? { repaired, unreadable: true } : { position, repaired };
    } finally {
      await handle.close();
    }
  }
}

async function readByte(handle: FileHandle, at: number): Promise<number> {
  const b = Buffer.alloc(1);
  await handle.read(b, 0, 1, at);
  return b[0]!;
}

/** The offset of the last newline before `before` (exclusive), or -1. */
async function lastNewline(handle: FileHandle, before: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  let end = before;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const at = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (at >= 0) return start + at;
    end = start;
  }
  return -1;
}

/**
 * The file sink's checkpoint: its own small file (positions passed over leave no line) and the
 * file's last line, whichever is further. A crash after the lines were synced but before the
 * checkpoint was saved is caught by the line; events the sink does not write are caught by the
 * checkpoint.
 */
export class JsonlFileCheckpoint implements SinkCheckpoint {
  readonly shared: boolean;

  constructor(
    private readonly file: JsonlFileOutput,
    private readonly saved: SinkCheckpoint,
    private readonly onTail: (tail: FileTail) => void = () => undefined,
  ) {
    this.shared = saved.shared ?? false;
  }

  async load(): Promise<number | undefined> {
    const saved = await this.saved.load();
    const tail = await this.file.tail();
    this.onTail(tail);
    if (tail.position === undefined) return saved;
    return saved === undefined ? tail.position : Math.max(saved, tail.position);
  }

  save(position: number): Promise<void> {
    return this.saved.save(position);
  }
}
