import { mkdir, open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { SinkCheckpoint } from './sinks.ports.ts';

/**
 * A sink's checkpoint in a small file of its own, `{"position":42,"at":"…"}`, private to the
 * process owner (0600). Replaced atomically: written beside it, synced, renamed over it, and the
 * directory synced, so a crash leaves the old checkpoint or the new one, never a torn one.
 */
export class FileCheckpoint implements SinkCheckpoint {
  constructor(readonly path: string) {}

  async load(): Promise<number | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    let position: unknown;
    try {
      position = (JSON.parse(text) as { position?: unknown }).position;
    } catch {
      position = undefined;
    }
    if (typeof position !== 'number' || !Number.isSafeInteger(position) || position < 0)
      throw new Error(`the sink checkpoint ${this.path} is not readable: fix or remove it`);
    return position;
  }

  async save(position: number): Promise<void> {
    const dir = dirname(this.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const temporary = `${this.path}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify({ position, at: new Date().toISOString() })}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.path);
    await syncDirectory(dir);
  }
}

/** Makes a directory's entries (a created or renamed file) durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
