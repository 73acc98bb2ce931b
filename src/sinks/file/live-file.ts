// The file a file sink appends to. Guarantees: it is a regular file reached without following a symbolic
// link, with the configured mode (0600 by default); bytes are only ever appended, never truncated (a log
// shipper that saw a file shrink would read it again from the start, or glue the next line to a part it
// read), and no line is ever written after an unfinished one: a line cut short by a failed write is
// finished before anything else is written (file-sink.ts keeps its text). At open, an unfinished last line
// left by a crash is ended with a newline: one malformed line, the lines after it whole. Needs: a
// directory it may create.
import { constants, type Stats } from 'node:fs';
import { chmod, type FileHandle, lstat, mkdir, open, rename } from 'node:fs/promises';
import path from 'node:path';
import { describeFileError, UsageError } from '../../util/errors.ts';

const APPEND = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/** A write that failed after `written` of its bytes reached the file. */
export class PartialWrite extends Error {
  readonly written: number;
  readonly code: string | undefined;
  constructor(written: number, cause: unknown) {
    super(describeFileError(cause), { cause });
    this.written = written;
    this.code = (cause as NodeJS.ErrnoException | undefined)?.code;
  }
}

export class LiveFile {
  readonly path: string;
  private readonly mode: number;
  private handle: FileHandle;
  /** Bytes in the file (what this process knows of: only it appends). */
  private bytes: number;
  /** Where an unfinished line begins, when the last write stopped inside one. */
  private unfinishedAt: number | undefined;
  /** Written since the last sync. */
  private dirty = false;

  private constructor(filePath: string, mode: number, handle: FileHandle, bytes: number) {
    this.path = filePath;
    this.mode = mode;
    this.handle = handle;
    this.bytes = bytes;
  }

  /**
   * Opens `filePath` for appending (its directory created if missing), ending an unfinished last line
   * with a newline (returned as `ended`, the bytes of that line). A UsageError says what is wrong, where,
   * and how to fix it.
   */
  static async open(filePath: string, mode: number): Promise<{ file: LiveFile; ended: number }> {
    const handle = await openAppending(filePath, mode);
    try {
      const size = (await handle.stat()).size;
      const whole = await lastLineEnd(handle, size);
      let bytes = size;
      if (whole < size) {
        await handle.write('\n');
        await handle.datasync();
        bytes++;
      }
      return { file: new LiveFile(filePath, mode, handle, bytes), ended: size - whole };
    } catch (error) {
      await handle.close();
      throw usageError(filePath, error);
    }
  }

  get size(): number {
    return this.bytes;
  }

  /** Bytes of an unfinished line at the end of the file (0 when it ends with a whole line). */
  get unfinishedBytes(): number {
    return this.unfinishedAt === undefined ? 0 : this.bytes - this.unfinishedAt;
  }

  /**
   * Appends `data` from byte `from` on. Throws PartialWrite (with the bytes of this call that reached the
   * file) when the file system refuses the rest; `lineStart` is where the line being written began, so
   * that what a failure leaves unfinished is known.
   */
  async append(data: Buffer, from: number, lineStartOf: (written: number) => number): Promise<void> {
    let offset = from;
    try {
      while (offset < data.length) {
        const { bytesWritten } = await this.handle.write(data, offset, data.length - offset);
        offset += bytesWritten;
        this.bytes += bytesWritten;
        this.dirty = true;
      }
      this.unfinishedAt = undefined;
    } catch (error) {
      const start = lineStartOf(offset);
      this.unfinishedAt = offset > start ? this.bytes - (offset - start) : undefined;
      throw new PartialWrite(offset - from, error);
    }
  }

  /** Flushes what was written to the disk (fdatasync), if anything was since the last time. */
  async sync(): Promise<void> {
    if (!this.dirty) return;
    this.dirty = false;
    const handle = this.handle;
    try {
      await handle.datasync();
    } catch (error) {
      // Rotated meanwhile: that file was synced before it was closed.
      if (handle !== this.handle) return;
      this.dirty = true;
      throw error;
    }
  }

  /**
   * Renames the file to `rotatedPath` and goes on in a new, empty file at the same path. The renamed file
   * keeps its inode, which log shippers follow to read its end.
   */
  async rotate(rotatedPath: string): Promise<void> {
    await this.sync();
    await rename(this.path, rotatedPath);
    const next = await openAppending(this.path, this.mode).catch(async (error: unknown) => {
      // The path is free again: keep writing where we were rather than lose the sink.
      await rename(rotatedPath, this.path).catch(() => {});
      throw error;
    });
    await this.handle.close().catch(() => {});
    this.handle = next;
    // The new file's name (and the old one's new name) survive a crash of the node.
    await syncDirectory(path.dirname(this.path));
    this.bytes = 0;
    this.unfinishedAt = undefined;
    this.dirty = false;
  }

  async close(): Promise<void> {
    await this.sync().catch(() => {});
    await this.handle.close().catch(() => {});
  }
}

/** The directory created if missing; the file created with `mode`, refused if a link or not a regular file. */
async function openAppending(filePath: string, mode: number): Promise<FileHandle> {
  const directory = path.dirname(filePath);
  try {
    await mkdir(directory, { recursive: true, mode: directoryMode(mode) });
  } catch (error) {
    throw new UsageError(
      `cannot create the directory ${directory} of the file sink's path ${filePath}: ${describeFileError(error)}; create it, or choose a path in a writable directory.`,
      { cause: error },
    );
  }
  let existing: Stats | undefined;
  try {
    existing = await lstat(filePath);
  } catch {
    // Not there yet: created below.
  }
  if (existing?.isSymbolicLink())
    throw new UsageError(
      `the file sink's path ${filePath} is a symbolic link; kubediff does not follow links there (one could send events to any file it may write): give the path of a regular file.`,
    );
  if (existing && !existing.isFile())
    throw new UsageError(
      `the file sink's path ${filePath} is not a regular file; give the path of a regular file (it is created if missing).`,
    );
  let handle: FileHandle;
  try {
    handle = await open(filePath, APPEND, mode);
  } catch (error) {
    throw usageError(filePath, error);
  }
  // An existing file gets the configured mode too (umask does not apply to chmod).
  await chmod(filePath, mode).catch(async (error: unknown) => {
    await handle.close();
    throw usageError(filePath, error);
  });
  return handle;
}

/** Where the last whole line of the first `size` bytes ends (0 when there is none). */
async function lastLineEnd(handle: FileHandle, size: number): Promise<number> {
  const chunk = Buffer.alloc(64 * 1024);
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(0x0a);
    if (newline >= 0) return start + newline + 1;
    end = start;
  }
  return 0;
}

/** The directory's mode: the owner's, plus read and search for whom the file is readable. */
function directoryMode(fileMode: number): number {
  return 0o700 | (fileMode & 0o040 ? 0o050 : 0) | (fileMode & 0o004 ? 0o005 : 0);
}

function usageError(filePath: string, error: unknown): UsageError {
  if (error instanceof UsageError) return error;
  return new UsageError(
    `cannot open the file sink's path ${filePath}: ${describeFileError(error)}; choose a writable file (sinks[].path or --output-file).`,
    { cause: error },
  );
}

/** Makes a rename durable (where the file system lets a directory be synced). */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r').catch(() => undefined);
  if (!handle) return;
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse it; the rename happened all the same.
  } finally {
    await handle.close();
  }
}
