// The dead-letter file: one JSON line per event a sink could not deliver (docs/sinks.md), appended
// synchronously, so that a line is on disk before kubediff says it is there; created 0600 (whole events).
// A record's reason and sink are scrubbed of the configured credentials (util/credentials.ts).
// Bounded: past maxFileBytes the file rotates (file.1, file.2, …) and the oldest beyond maxFiles is
// deleted, logged once per file and counted (kubediff_dead_letter_dropped_total); only a record larger
// than maxFileBytes alone makes a file exceed it.
import {
  closeSync,
  existsSync,
  fstatSync,
  openSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import type { KubediffEvent } from '../../events/event.ts';
import { Credentials } from '../../util/credentials.ts';
import { describeFileError, errorMessage, UsageError } from '../../util/errors.ts';
import type { Logger } from '../../util/log.ts';
import { formatSize } from '../../util/size.ts';
import { isoTimestamp } from '../../util/timestamp.ts';
import type { DigestPayload } from './digest.ts';

export interface DeadLetterRecord {
  /** When it was written. */
  time: string;
  /** The sink's name (URLs elided). */
  sink: string;
  /** Why it was not delivered. */
  reason: string;
  event?: KubediffEvent;
  /** A digest whose delivery failed: its counts (and the events it kept in full, also written one by one). */
  digest?: Omit<DigestPayload, 'events'>;
}

/** How much disk a dead-letter file may take: `maxFiles` files (the current one and rotated ones) of `maxFileBytes`. */
export interface DeadLetterLimits {
  maxFileBytes: number;
  maxFiles: number;
}

/** 3 files of 10 MiB: 30 MiB, well inside deploy/'s 64 Mi data volume (docs/deploy.md). */
export const DEFAULT_DEAD_LETTER_LIMITS: DeadLetterLimits = { maxFileBytes: 10 * 1024 * 1024, maxFiles: 3 };

/** What a dead-letter file holds and has lost, for /metrics. */
export interface DeadLetterStats {
  path: string;
  /** Bytes in the file and its rotated files now. */
  bytes: number;
  /** Records deleted with the oldest file at the cap. */
  droppedRecords: number;
}

export class DeadLetterFile {
  readonly path: string;
  readonly limits: DeadLetterLimits;
  private fd: number | undefined;
  /** Bytes in the current file. */
  private size: number;
  private readonly log: Logger;
  private readonly credentials: Credentials;
  private failed = false;
  private droppedRecords = 0;

  private constructor(
    path: string,
    fd: number,
    log: Logger,
    limits: DeadLetterLimits,
    credentials: Credentials,
  ) {
    this.path = path;
    this.fd = fd;
    this.size = fstatSync(fd).size;
    this.log = log;
    this.limits = limits;
    this.credentials = credentials;
  }

  /**
   * Opens (creating it, mode 0600) for appending; a UsageError (exit 2) names the file and the problem.
   * `credentials`: scrubbed from each record's reason and sink (a reason may quote a receiver's answer).
   */
  static open(
    path: string,
    log: Logger,
    limits: DeadLetterLimits = DEFAULT_DEAD_LETTER_LIMITS,
    credentials: Credentials = Credentials.none,
  ): DeadLetterFile {
    try {
      return new DeadLetterFile(path, openSync(path, 'a', 0o600), log, limits, credentials);
    } catch (error) {
      throw new UsageError(
        `cannot open the dead-letter file ${path}: ${describeFileError(error)}; choose a writable file with --dead-letter.`,
        { cause: error },
      );
    }
  }

  /** Appends one record per event; false when the file cannot be written (reported once). */
  writeEvents(sink: string, reason: string, events: readonly KubediffEvent[]): boolean {
    if (events.length === 0) return true;
    const time = isoTimestamp();
    return this.append(events.map((event) => ({ time, sink, reason, event })));
  }

  writeDigest(sink: string, reason: string, digest: DigestPayload): boolean {
    const { events, ...counts } = digest;
    const time = isoTimestamp();
    return this.append([
      { time, sink, reason, digest: counts },
      ...events.map((event) => ({
        time,
        sink,
        reason: `${reason} (kept in full by digest ${digest.id})`,
        event,
      })),
    ]);
  }

  stats(): DeadLetterStats {
    let bytes = 0;
    for (const file of this.files()) {
      try {
        bytes += statSync(file).size;
      } catch {
        // Not there (not rotated yet, or removed by hand).
      }
    }
    return { path: this.path, bytes, droppedRecords: this.droppedRecords };
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // Nothing more can be done about it.
    }
    this.fd = undefined;
  }

  private append(records: DeadLetterRecord[]): boolean {
    if (this.fd === undefined || this.failed) return false;
    try {
      for (const record of records) {
        // The event is written as it is (redacted already); what kubediff says about it, scrubbed.
        const said = {
          ...record,
          sink: this.credentials.scrub(record.sink),
          reason: this.credentials.scrub(record.reason),
        };
        const line = Buffer.from(`${JSON.stringify(said)}\n`);
        if (this.size > 0 && this.size + line.length > this.limits.maxFileBytes) this.rotate();
        const fd = this.fd as number;
        for (let offset = 0; offset < line.length; ) offset += writeSync(fd, line, offset);
        this.size += line.length;
      }
      return true;
    } catch (error) {
      this.failed = true;
      this.log.warn(
        `cannot write the dead-letter file ${this.path}: ${errorMessage(error)}; undelivered events are only counted from now on.`,
      );
      return false;
    }
  }

  /** The current file, then the rotated ones, newest first: `file`, `file.1`, … */
  private files(): string[] {
    return Array.from({ length: this.limits.maxFiles }, (_, index) =>
      index === 0 ? this.path : `${this.path}.${index}`,
    );
  }

  /** The current file is full: shift the rotated files by one, deleting the oldest beyond maxFiles. */
  private rotate(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    const files = this.files();
    const oldest = files[files.length - 1] as string;
    if (existsSync(oldest)) this.drop(oldest);
    for (let index = files.length - 1; index > 0; index--) {
      const from = files[index - 1] as string;
      if (existsSync(from)) renameSync(from, files[index] as string);
    }
    this.fd = openSync(this.path, 'a', 0o600);
    this.size = 0;
  }

  /** Deletes the oldest file at the cap, counting the records lost with it. */
  private drop(file: string): void {
    const records = countLines(file);
    unlinkSync(file);
    if (this.droppedRecords === 0) {
      const { maxFiles, maxFileBytes } = this.limits;
      this.log.warn(
        `the dead-letter file ${this.path} is at its cap (${maxFiles} file${maxFiles === 1 ? '' : 's'} of ${formatSize(maxFileBytes)}): deleted ${file} and the ${records} dead letter${records === 1 ? '' : 's'} in it, and each further rotation deletes the oldest file; replay and remove them, or raise --dead-letter-max-files or --dead-letter-max-size (counted in kubediff_dead_letter_dropped_total).`,
      );
    }
    this.droppedRecords += records;
  }
}

/** Lines in `file`, read in small chunks (a file from an older kubediff may be large). */
function countLines(file: string): number {
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let lines = 0;
    for (let read = readSync(fd, chunk); read > 0; read = readSync(fd, chunk)) {
      for (let index = 0; index < read; index++) if (chunk[index] === 0x0a) lines++;
    }
    return lines;
  } finally {
    closeSync(fd);
  }
}

/** How a log line ends for `what` that was not delivered: where it went, if anywhere. */
export function lossNote(what: string, file: DeadLetterFile | undefined): string {
  return file ? `${what} written to the dead-letter file ${file.path}.` : `${what} not delivered.`;
}
