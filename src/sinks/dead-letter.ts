// The dead-letter file: one JSON object per line for each event a sink could
// not deliver (retries exhausted, refused by the receiver, not delivered by
// shutdown, or summarized in a digest that could not keep it in full), so
// that nothing is lost without a trace and it can be replayed. Receivers
// deduplicate by event id, so replaying an event that did arrive is harmless.
//
// Lines are appended synchronously: dead letters are rare, and a line must
// be on disk before kubediff reports it as written there.
import { closeSync, openSync, writeSync } from 'node:fs';
import type { ChangeEvent } from '../diff/types.ts';
import { errorMessage, UsageError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { DigestPayload } from './digest.ts';

export interface DeadLetterRecord {
  /** When it was written. */
  time: string;
  /** The sink's name (URLs elided). */
  sink: string;
  /** Why it was not delivered. */
  reason: string;
  event?: ChangeEvent;
  /** A digest whose delivery failed: its counts (and the events it kept in full, also written one by one). */
  digest?: Omit<DigestPayload, 'events'>;
}

export class DeadLetterFile {
  readonly path: string;
  private fd: number | undefined;
  private readonly log: Logger;
  private failed = false;

  private constructor(path: string, fd: number, log: Logger) {
    this.path = path;
    this.fd = fd;
    this.log = log;
  }

  /** Opens (creating it, mode 0600) for appending; a UsageError (exit 2) names the file and the problem. */
  static open(path: string, log: Logger): DeadLetterFile {
    try {
      return new DeadLetterFile(path, openSync(path, 'a', 0o600), log);
    } catch (error) {
      throw new UsageError(
        `cannot open the dead-letter file ${path}: ${describeOpenError(error)}; choose a writable file with --dead-letter.`,
        { cause: error },
      );
    }
  }

  /** Appends one record per event; false when the file cannot be written (reported once). */
  writeEvents(sink: string, reason: string, events: readonly ChangeEvent[]): boolean {
    if (events.length === 0) return true;
    const time = new Date().toISOString();
    return this.append(events.map((event) => ({ time, sink, reason, event })));
  }

  writeDigest(sink: string, reason: string, digest: DigestPayload): boolean {
    const { events, ...counts } = digest;
    const time = new Date().toISOString();
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
      const data = Buffer.from(records.map((record) => `${JSON.stringify(record)}\n`).join(''));
      for (let offset = 0; offset < data.length; ) offset += writeSync(this.fd, data, offset);
      return true;
    } catch (error) {
      this.failed = true;
      this.log.warn(
        `cannot write the dead-letter file ${this.path}: ${errorMessage(error)}; undelivered events are only counted from now on.`,
      );
      return false;
    }
  }
}

/** How a log line ends for `what` that was not delivered: where it went, if anywhere. */
export function lossNote(what: string, file: DeadLetterFile | undefined): string {
  return file ? `${what} written to the dead-letter file ${file.path}.` : `${what} not delivered.`;
}

function describeOpenError(error: unknown): string {
  switch ((error as { code?: unknown } | undefined)?.code) {
    case 'ENOENT':
      return 'its directory does not exist';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory';
    case 'EROFS':
      return 'the file system is read-only';
    default:
      return errorMessage(error);
  }
}
