import { constants, statSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/** Where glibc's shm_open keeps POSIX shared-memory objects on Linux (shm_overview(7)). */
export const SHM_DIRECTORY = '/dev/shm';

/**
 * Why a key is not a POSIX shared-memory name, or undefined when it is one: a single leading '/'
 * and a name without '/', not '.' or '..' (shm_open(3)), so the object is always a file directly
 * under the shm directory.
 */
export function invalidKey(key: string): string | undefined {
  if (!/^\/[^/\0]+$/.test(key) || key === '/.' || key === '/..') return "a POSIX shared-memory name is '/' followed by a name without '/'";
  return undefined;
}

/** Whether the shm directory exists here (Linux; macOS has no /dev/shm). */
export function shmDirectoryExists(directory: string): boolean {
  try {
    return statSync(directory).isDirectory();
  } catch {
    return false;
  }
}

/** An open object and its size when it was opened. */
export interface OpenObject {
  readonly handle: FileHandle;
  readonly size: number;
}

/** Why an object could not be opened, in words: an errno code from open(2), or what the object is instead of a file. */
export class ObjectUnusable extends Error {}

/**
 * Runs `use` on the object `key` of `directory`, opened for reading or writing and closed after.
 * O_NOFOLLOW: a symbolic link planted in the directory cannot lead out of it (glibc's shm_open
 * opens with it too). O_NONBLOCK and the regular-file check: a FIFO or a device under that name
 * can neither hang the open nor a read on libuv's pool.
 */
export async function withObject<T>(directory: string, key: string, mode: 'read' | 'write', use: (object: OpenObject) => Promise<T>): Promise<T> {
  const flags = (mode === 'read' ? constants.O_RDONLY : constants.O_WRONLY) | constants.O_NOFOLLOW | constants.O_NONBLOCK;
  let handle: FileHandle;
  try {
    handle = await open(join(directory, key.slice(1)), flags);
  } catch (err) {
    throw new ObjectUnusable(openFailure(err), { cause: err });
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new ObjectUnusable('not a shared-memory object');
    return await use({ handle, size: stats.size });
  } finally {
    await handle.close();
  }
}

/**
 * Copies [position, position + bytes.byteLength) of the object into `bytes` with pread on libuv's
 * pool. Returns how many bytes it got: fewer than asked means the object ended first (it shrank).
 */
export async function readInto(handle: FileHandle, bytes: Uint8Array, position: number): Promise<number> {
  let filled = 0;
  while (filled < bytes.byteLength) {
    // One pread returns at most about 2 GiB (read(2)); the loop takes the rest.
    const { bytesRead } = await handle.read(bytes, filled, bytes.byteLength - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled;
}

/** Writes `bytes` at `position` of the object with pwrite on libuv's pool. */
export async function writeAt(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let written = 0;
  while (written < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.byteLength - written, position + written);
    written += bytesWritten;
  }
}

const OPEN_FAILURES: Readonly<Record<string, string>> = {
  ENOENT: 'no such object',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ELOOP: 'a symbolic link, which is not followed',
  EISDIR: 'a directory',
  ENAMETOOLONG: 'the name is too long',
};

/** The errno code in words, without the path, which names the server's own directory. */
function openFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
  return OPEN_FAILURES[code] ?? code;
}
