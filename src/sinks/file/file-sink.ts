// The file sink (docs/sinks.md#file): events as JSON lines, the same text as `--output json`, appended to a
// file that is rotated past maxSize and whose rotated files are gzipped and kept up to maxFiles. It is a
// batch sink (batch-sink.ts): a write the file system refuses (disk full, read-only) fails its batch like
// a refused request, retried with backoff while events wait in the bounded queue, then dead-lettered, each
// trouble said once; the lines a failed write did reach the file are counted delivered and never written
// twice. Guarantees: no file exceeds maxSize unless one line alone does; the file only grows, and a line a
// failed write cut short is finished (from its text kept here) before any other is written, even when its
// batch was given up (its event is then in the dead-letter file too) (live-file.ts); every event accepted
// is delivered, dead-lettered or counted lost by close().

import { describeFileError } from '../../util/errors.ts';
import type { BatchSinkOptions, BatchWork, Transmission } from '../core/batch-sink.ts';
import { BatchSink } from '../core/batch-sink.ts';
import type { SinkFileStats } from '../core/sink.ts';
import { FILE_SINK_DEFAULTS, type FsyncPolicy } from './config.ts';
import { LiveFile, PartialWrite } from './live-file.ts';
import { RotatedFiles } from './rotated-files.ts';

export interface FileSinkOptions extends BatchSinkOptions {
  path: string;
  /** Bytes a file may hold before it is rotated. */
  maxSize?: number | undefined;
  /** Rotated files kept. */
  maxFiles?: number | undefined;
  /** Gzip rotated files. */
  compress?: boolean | undefined;
  fsync?: FsyncPolicy | undefined;
  fsyncIntervalMs?: number | undefined;
  /** The files' permission bits. */
  mode?: number | undefined;
}

/** What the sink's files hold and what became of them, for /metrics. */
export class FileSink extends BatchSink {
  private readonly file: LiveFile;
  private readonly rotated: RotatedFiles;
  private readonly maxSize: number;
  private readonly fsync: FsyncPolicy;
  private readonly timer: NodeJS.Timeout | undefined;
  /** The line the live file ends with unfinished, if a write stopped inside one. */
  private unfinishedLine: string | undefined;
  private rotations = 0;

  /**
   * Opens the file (a UsageError says what is wrong with its path) and finishes what a previous run left
   * among the rotated files.
   */
  static async create(options: FileSinkOptions): Promise<FileSink> {
    const mode = options.mode ?? FILE_SINK_DEFAULTS.mode;
    const { file, ended } = await LiveFile.open(options.path, mode);
    const sink = new FileSink(options, file);
    if (ended > 0)
      sink.trouble.warn(
        `the file ended with an unfinished line (${ended} bytes, from a run that stopped while writing it): ended with a newline, so that the next line starts on a line of its own; that one line is not valid JSON.`,
      );
    await sink.rotated.recover().catch((error: unknown) => {
      sink.trouble.warn(`cannot read the rotated files beside ${options.path}: ${describeFileError(error)}.`);
    });
    return sink;
  }

  private constructor(options: FileSinkOptions, file: LiveFile) {
    const maxSize = options.maxSize ?? FILE_SINK_DEFAULTS.maxSize;
    super(options, { timeoutMs: 30_000, batchMaxBytes: Math.min(1024 * 1024, maxSize) });
    this.file = file;
    this.maxSize = maxSize;
    this.fsync = options.fsync ?? FILE_SINK_DEFAULTS.fsync;
    this.rotated = new RotatedFiles(options.path, {
      maxFiles: options.maxFiles ?? FILE_SINK_DEFAULTS.maxFiles,
      compress: options.compress ?? FILE_SINK_DEFAULTS.compress,
      mode: options.mode ?? FILE_SINK_DEFAULTS.mode,
      trouble: (key, message) => this.trouble.refused(key, message),
      info: (message) => this.trouble.info(message),
    });
    if (this.fsync === 'interval') {
      this.timer = setInterval(
        () => void this.sync(),
        options.fsyncIntervalMs ?? FILE_SINK_DEFAULTS.fsyncIntervalMs,
      );
      this.timer.unref();
    }
  }

  fileStats(): SinkFileStats {
    const rotated = this.rotated.stats();
    return {
      path: this.file.path,
      bytes: this.file.size + rotated.bytes,
      rotations: this.rotations,
      deleted: rotated.deleted,
      compressionFailures: rotated.compressionFailures,
    };
  }

  /**
   * Appends the batch's lines, rotating before a line that would take the file past maxSize. A failure
   * after some lines reached the file reports the rest as items to retry (the delivered ones are counted);
   * a line cut short is finished by the retry, from the byte where it stopped.
   */
  protected async transmit(work: BatchWork): Promise<Transmission> {
    const lines = work.kind === 'events' ? work.json : [JSON.stringify(work.digest.toPayload())];
    let next = 0;
    try {
      let resume = 0;
      if (this.file.unfinishedBytes > 0) {
        if (lines[0] === this.unfinishedLine) resume = this.file.unfinishedBytes;
        else await this.finishUnfinished();
      }
      const sizes = lines.map((line) => Buffer.byteLength(line) + 1);
      while (next < lines.length) {
        const first = sizes[next] as number;
        if (resume === 0 && this.file.size > 0 && this.file.size + first > this.maxSize) await this.rotate();
        let end = next + 1;
        let bytes = first - resume;
        while (end < lines.length && this.file.size + bytes + (sizes[end] as number) <= this.maxSize) {
          bytes += sizes[end] as number;
          end++;
        }
        await this.writeLines(lines, next, end, sizes, resume);
        resume = 0;
        next = end;
      }
    } catch (error) {
      return this.durable(() => this.failure(lines, next, error));
    }
    return this.durable(() => ({ ok: true }));
  }

  /**
   * With fsync: every-event a line counts delivered only once it is on the disk: the lines written are
   * flushed first, and a failed flush fails the whole batch (retried: what reached the disk of the first
   * copy may be there twice). With interval or never, `written` stands.
   */
  private async durable(written: () => Transmission): Promise<Transmission> {
    if (this.fsync !== 'every-event') return written();
    try {
      await this.file.sync();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'error';
      const reason = `cannot flush ${this.file.path} to the disk: ${describeFileError(error)}`;
      return { ok: false, retryable: true, aborted: false, reason, key: `fsync: ${code}` };
    }
    return written();
  }

  /** Lines [from, to) in one write, the first from its byte `resume`; `next` advances as lines land. */
  private async writeLines(
    lines: readonly string[],
    from: number,
    to: number,
    sizes: readonly number[],
    resume: number,
  ): Promise<void> {
    const data = Buffer.from(`${lines.slice(from, to).join('\n')}\n`);
    const ends: number[] = [];
    let end = 0;
    for (let index = from; index < to; index++) {
      end += sizes[index] as number;
      ends.push(end);
    }
    try {
      await this.file.append(data, resume, (offset) => lineStart(ends, offset));
    } catch (error) {
      if (!(error instanceof PartialWrite)) throw error;
      const reached = resume + error.written;
      const whole = ends.filter((end) => end <= reached).length;
      this.unfinishedLine = this.file.unfinishedBytes > 0 ? lines[from + whole] : undefined;
      throw new LinesWritten(from + whole, error);
    }
  }

  /** The lines from `written` on were not written: all of them (a failure), or the rest (items to retry). */
  private failure(lines: readonly string[], next: number, error: unknown): Transmission {
    const written = error instanceof LinesWritten ? error.lines : next;
    const cause = error instanceof LinesWritten ? error.cause : error;
    const code = (cause as { code?: string } | undefined)?.code ?? 'error';
    const reason = `cannot write ${this.file.path}: ${describeFileError(cause instanceof PartialWrite ? cause.cause : cause)}`;
    if (written === 0) return { ok: false, retryable: true, aborted: false, reason, key: code };
    return {
      ok: true,
      itemFailures: lines
        .slice(written)
        .map((_, offset) => ({ index: written + offset, reason, key: code, retryable: true })),
    };
  }

  /**
   * Writes the rest of the line a failed write cut short, whose batch was given up: the file is never
   * truncated (a shipper may have read the part). Throws when the file system still refuses.
   */
  private async finishUnfinished(): Promise<void> {
    const from = this.file.unfinishedBytes;
    if (from === 0) return;
    const data = Buffer.from(`${this.unfinishedLine ?? ''}\n`);
    await this.file.append(data, Math.min(from, data.length - 1), () => 0);
    this.unfinishedLine = undefined;
  }

  private async rotate(): Promise<void> {
    const rotatedPath = await this.rotated.nextPath();
    await this.file.rotate(rotatedPath);
    this.rotations++;
    this.rotated.added(rotatedPath);
  }

  /**
   * fdatasync for fsync: interval and at close: what failed is said once; the lines stay counted delivered
   * (writing them again would repeat them). fsync: every-event flushes in transmit() instead.
   */
  private async sync(): Promise<void> {
    try {
      await this.file.sync();
    } catch (error) {
      this.trouble.refused(
        `fsync: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
        `cannot flush ${this.file.path} to the disk: ${describeFileError(error)}; the lines are written but may not survive a crash of the node.`,
      );
    }
  }

  /** After the last batch: the compressions finish (or are left for the next start at the deadline), then the file is flushed and closed. */
  protected async release(): Promise<void> {
    clearInterval(this.timer);
    // A line left unfinished by a batch given up on is finished (else ended with a newline at the next start).
    await this.finishUnfinished().catch(() => {});
    await this.rotated.close(this.clock.deadlineSignal);
    if (this.fsync !== 'never') await this.sync();
    await this.file.close();
  }
}

/** A failed write, with how many lines of the batch reached the file whole. */
class LinesWritten extends Error {
  readonly lines: number;
  constructor(lines: number, cause: PartialWrite) {
    super(cause.message, { cause });
    this.lines = lines;
  }
}

/** Where the line holding byte `offset` of a write begins, given the lines' ends. */
function lineStart(ends: readonly number[], offset: number): number {
  let start = 0;
  for (const end of ends) {
    if (end > offset) return start;
    start = end;
  }
  return start;
}
