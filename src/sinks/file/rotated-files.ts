// The files a file sink has rotated out: `<name>.<UTC time of rotation>` (e.g.
// events.jsonl.2026-12-02T04-20-06.123Z), gzipped in the background, one at a time, to the same name with
// `.gz`. Guarantees: a `.gz` is only ever seen complete (written to `.gz.tmp`, synced, then renamed) and
// the plain file is removed only after that, so at any moment each rotated file's lines are in exactly one
// of the two; after a crash, open() finishes the job (a leftover `.tmp` deleted, a plain file beside its
// `.gz` deleted, a plain file alone compressed). At most `maxFiles` are kept, the oldest deleted first.
// Compressions and deletions run one at a time in one queue, so a file is never deleted while it is being
// compressed; until the queue reaches a deletion, one more file than maxFiles may be on disk. Only regular
// files are touched: a symbolic link (or anything else) named like a rotated file is left alone.
import { constants, createWriteStream } from 'node:fs';
import { lstat, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { plural } from '../../util/count-text.ts';
import { describeFileError } from '../../util/errors.ts';
import { escapeRegExp } from '../../util/glob.ts';
import { isoTimestamp } from '../../util/timestamp.ts';
import { syncDirectory } from './live-file.ts';

/** A deletion of the oldest beyond maxFiles, queued among the compressions. */
const PRUNE = Symbol('prune');

const STAMP = String.raw`\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z`;

export interface RotatedFilesOptions {
  /** Rotated files kept (0: deleted at once). */
  maxFiles: number;
  /** Gzip them (default) or keep them as they are. */
  compress: boolean;
  mode: number;
  /** Said once per kind of trouble (the sink's TroubleReport). */
  trouble: (key: string, message: string) => void;
  info: (message: string) => void;
}

/** What the rotated files hold now and what became of them, for metrics. */
export interface RotatedFilesStats {
  /** Rotated files on disk, compressed or not. */
  files: number;
  /** Their size on disk. */
  bytes: number;
  /** Deleted as the oldest beyond maxFiles. */
  deleted: number;
  /** Compressions that failed (the plain file was kept and is tried again later). */
  compressionFailures: number;
}

export class RotatedFiles {
  private readonly livePath: string;
  private readonly directory: string;
  private readonly pattern: RegExp;
  private readonly options: RotatedFilesOptions;
  /** Compressions (a path) and deletions beyond maxFiles ('prune'), in order. */
  private readonly waiting: (string | typeof PRUNE)[] = [];
  private running: Promise<void> | undefined;
  private lastStamp = 0;
  private deleted = 0;
  private compressionFailures = 0;
  private files = 0;
  private bytes = 0;
  private abort = new AbortController();
  private saidDeleting = false;

  constructor(livePath: string, options: RotatedFilesOptions) {
    this.livePath = livePath;
    this.directory = path.dirname(livePath);
    const base = escapeRegExp(path.basename(livePath));
    this.pattern = new RegExp(`^${base}\\.(${STAMP})(\\.gz)?(\\.tmp)?$`);
    this.options = options;
  }

  /** Finishes what a previous run left (see the header), then keeps maxFiles. */
  async recover(): Promise<void> {
    const found = await this.list(true);
    for (const entry of found) {
      if (entry.tmp) await unlink(entry.path).catch(() => {});
    }
    const compressed = new Set(found.filter((e) => e.gz && !e.tmp).map((e) => e.stamp));
    for (const entry of found) {
      if (entry.gz || entry.tmp) continue;
      if (compressed.has(entry.stamp)) await unlink(entry.path).catch(() => {});
      else if (this.options.compress) this.waiting.push(entry.path);
    }
    this.waiting.push(PRUNE);
    this.kick();
  }

  /** A free name for the file being rotated now: its time, a millisecond later if taken. */
  async nextPath(now = Date.now()): Promise<string> {
    let stamp = Math.max(now, this.lastStamp + 1);
    for (;;) {
      const candidate = `${this.livePath}.${isoTimestamp(stamp).replaceAll(':', '-')}`;
      if (!(await exists(candidate)) && !(await exists(`${candidate}.gz`))) {
        this.lastStamp = stamp;
        return candidate;
      }
      stamp++;
    }
  }

  /** `rotatedPath` was just rotated out: queued for compression, then the oldest beyond maxFiles go. */
  added(rotatedPath: string): void {
    if (this.options.compress && this.options.maxFiles > 0) this.waiting.push(rotatedPath);
    this.waiting.push(PRUNE);
    this.kick();
  }

  stats(): RotatedFilesStats {
    return {
      files: this.files,
      bytes: this.bytes,
      deleted: this.deleted,
      compressionFailures: this.compressionFailures,
    };
  }

  /** Waits for the compressions queued; at `deadline`, the one running is abandoned (done at the next start). */
  async close(deadline: AbortSignal): Promise<void> {
    const stop = () => {
      this.waiting.length = 0;
      this.abort.abort();
    };
    if (deadline.aborted) stop();
    deadline.addEventListener('abort', stop, { once: true });
    try {
      while (this.running) await this.running;
    } finally {
      deadline.removeEventListener('abort', stop);
    }
  }

  private kick(): void {
    if (this.running || this.waiting.length === 0) return;
    this.running = (async () => {
      for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift()) {
        if (next === PRUNE) await this.prune();
        else await this.compress(next);
      }
      await this.measure();
    })().finally(() => {
      this.running = undefined;
      // Added while the last one finished.
      this.kick();
    });
  }

  /** `plain` → `plain.gz` (through `plain.gz.tmp`), then `plain` deleted; on failure the plain file stays. */
  private async compress(plain: string): Promise<void> {
    const target = `${plain}.gz`;
    const tmp = `${target}.tmp`;
    try {
      // Not through a symbolic link put in its place since it was listed.
      const source = await open(plain, constants.O_RDONLY | constants.O_NOFOLLOW);
      await pipeline(
        source.createReadStream(),
        createGzip(),
        createWriteStream(tmp, { flags: 'wx', mode: this.options.mode }),
        { signal: this.abort.signal },
      );
      const handle = await open(tmp, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      // Deleted meanwhile as the oldest: its lines are gone, the copy must not bring them back.
      if (!(await exists(plain))) {
        await unlink(tmp);
        return;
      }
      await rename(tmp, target);
      await syncDirectory(this.directory);
      await unlink(plain);
    } catch (error) {
      await unlink(tmp).catch(() => {});
      if (this.abort.signal.aborted) return;
      // Deleted meanwhile (by hand: the queue's own deletions wait for this compression); nothing to keep.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      this.compressionFailures++;
      this.options.trouble(
        `compress: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        `cannot compress the rotated file ${plain}: ${describeFileError(error)}; it is kept uncompressed (and still counts among the files kept), and tried again at the next start.`,
      );
    }
  }

  /** Deletes the oldest rotated files beyond maxFiles. */
  private async prune(): Promise<void> {
    const kept = (await this.list(false)).filter((e) => !e.tmp);
    const stamps = [...new Set(kept.map((e) => e.stamp))].sort();
    const excess = stamps.slice(0, Math.max(0, stamps.length - this.options.maxFiles));
    for (const stamp of excess) {
      for (const entry of kept.filter((e) => e.stamp === stamp)) {
        await unlink(entry.path).catch(() => {});
      }
      this.deleted++;
    }
    if (excess.length > 0 && !this.saidDeleting) {
      this.saidDeleting = true;
      this.options.info(
        `keeping ${plural(this.options.maxFiles, 'rotated file')} (maxFiles): the oldest is deleted at each rotation from now on.`,
      );
    }
    await this.measure();
  }

  private async measure(): Promise<void> {
    const entries = await this.list(false);
    let bytes = 0;
    for (const entry of entries) {
      bytes += await stat(entry.path).then(
        (s) => s.size,
        () => 0,
      );
    }
    // A plain file and its .gz (the moment between rename and delete) are one rotated file.
    this.files = new Set(entries.filter((e) => !e.tmp).map((e) => e.stamp)).size;
    this.bytes = bytes;
  }

  private async list(strict: boolean): Promise<RotatedEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (error) {
      if (strict) throw error;
      return [];
    }
    const entries: RotatedEntry[] = [];
    for (const name of names) {
      const match = this.pattern.exec(name);
      if (!match) continue;
      const entry = {
        path: path.join(this.directory, name),
        stamp: match[1] as string,
        gz: match[2] !== undefined,
        tmp: match[3] !== undefined,
      };
      const isFile = await lstat(entry.path).then(
        (s) => s.isFile(),
        () => false,
      );
      if (isFile) entries.push(entry);
    }
    return entries;
  }
}

interface RotatedEntry {
  path: string;
  stamp: string;
  gz: boolean;
  tmp: boolean;
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}
