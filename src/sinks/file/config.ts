// The file sink's settings (docs/sinks.md#file): its entry in the config file's `sinks:` (the schema
// fragment the file's schema is assembled from, its defaults and the checks a schema cannot state), the
// `--output-file` flag as such an entry, and the spec the factory creates the sink from.
import { checkDuration } from '../../util/duration.ts';
import { parseSize } from '../../util/size.ts';
import type { BacklogOptions } from '../backlog.ts';

export const FILE_SINK_TYPE = 'file';

export const FSYNC_POLICIES = ['every-event', 'interval', 'never'] as const;
/** When written lines are flushed to the disk (fdatasync); a rotation always flushes, close() unless `never`. */
export type FsyncPolicy = (typeof FSYNC_POLICIES)[number];

export const FILE_SINK_DEFAULTS = {
  maxSize: 100 * 1024 * 1024,
  maxFiles: 5,
  compress: true,
  fsync: 'interval' as FsyncPolicy,
  fsyncIntervalMs: 1000,
  mode: 0o600,
};

/** The least maxSize: a file holds a few events before it is rotated. */
export const MIN_MAX_SIZE = 1024;
export const MAX_MAX_FILES = 1000;

/** One `sinks:` entry of type file; the keys every entry has (name, filter) are the file schema's. */
export const fileSinkSchema = {
  type: 'object',
  properties: {
    type: { const: FILE_SINK_TYPE },
    path: { type: 'string', minLength: 1 },
    // A size (100MB): the live file is rotated before a line would take it past this.
    maxSize: { type: 'string' },
    maxFiles: { type: 'integer', minimum: 0, maximum: MAX_MAX_FILES },
    compress: { type: 'boolean' },
    fsync: { type: 'string', enum: FSYNC_POLICIES },
    fsyncInterval: { type: 'string', $comment: 'duration' },
    // Octal permission bits, as a string ("0640"): YAML would read 0640 as a decimal number.
    mode: { type: 'string', pattern: '^0?[0-7]{3}$' },
    queueCapacity: { type: 'integer', minimum: 1 },
    deadLetter: { type: 'string' },
  },
  required: ['type', 'path'],
  additionalProperties: false,
} as const;

/** The entry as validated by the schema (without the keys every entry shares). */
export interface FileSinkEntry {
  type: typeof FILE_SINK_TYPE;
  path: string;
  maxSize?: string;
  maxFiles?: number;
  compress?: boolean;
  fsync?: FsyncPolicy;
  fsyncInterval?: string;
  mode?: string;
  queueCapacity?: number;
  deadLetter?: string;
}

/** What the factory creates a file sink from: every option, defaults applied by the sink. */
export interface FileSinkSpec {
  type: typeof FILE_SINK_TYPE;
  name?: string;
  path: string;
  maxSize?: number;
  maxFiles?: number;
  compress?: boolean;
  fsync?: FsyncPolicy;
  fsyncIntervalMs?: number;
  mode?: number;
  queue?: BacklogOptions;
  /** JSONL file for events that cannot be written (default: the watch's --dead-letter). */
  deadLetterFile?: string;
}

/** A problem with the value at `key` of the entry (reported at its line and column). */
export type EntryProblem = (key: readonly string[], message: string) => Error;

/** The entry's own keys as a spec; a value the schema could not judge (a size, a duration) is a problem at its key. */
export function fileSpecOf(entry: FileSinkEntry, problem: EntryProblem): FileSinkSpec {
  const maxSize = entry.maxSize === undefined ? undefined : sizeOf(entry.maxSize, problem);
  const fsyncIntervalMs =
    entry.fsyncInterval === undefined ? undefined : intervalOf(entry.fsyncInterval, problem);
  if (fsyncIntervalMs !== undefined && (entry.fsync ?? FILE_SINK_DEFAULTS.fsync) !== 'interval')
    throw problem(['fsyncInterval'], `applies to fsync: interval, and fsync is ${entry.fsync}`);
  return {
    type: FILE_SINK_TYPE,
    path: entry.path,
    ...(maxSize !== undefined ? { maxSize } : {}),
    ...(entry.maxFiles !== undefined ? { maxFiles: entry.maxFiles } : {}),
    ...(entry.compress !== undefined ? { compress: entry.compress } : {}),
    ...(entry.fsync !== undefined ? { fsync: entry.fsync } : {}),
    ...(fsyncIntervalMs !== undefined ? { fsyncIntervalMs } : {}),
    ...(entry.mode !== undefined ? { mode: Number.parseInt(entry.mode, 8) } : {}),
    ...(entry.queueCapacity !== undefined ? { queue: { capacity: entry.queueCapacity } } : {}),
    ...(entry.deadLetter !== undefined ? { deadLetterFile: entry.deadLetter } : {}),
  };
}

/** `--output-file PATH`: a file sink with every default. */
export function fileSpecFromFlag(path: string | undefined): FileSinkSpec[] {
  const trimmed = path?.trim();
  return trimmed ? [{ type: FILE_SINK_TYPE, path: trimmed }] : [];
}

/** 'file /var/log/kubediff/events.jsonl' (a path holds no credential). */
export function fileSinkName(spec: { path: string }): string {
  return `file ${spec.path}`;
}

function sizeOf(text: string, problem: EntryProblem): number {
  let bytes: number;
  try {
    bytes = parseSize('maxSize', text);
  } catch {
    throw problem(['maxSize'], `expected a size such as 100MB or 1GB, got "${text}"`);
  }
  if (bytes < MIN_MAX_SIZE) throw problem(['maxSize'], `must be at least 1KB, got "${text}"`);
  return bytes;
}

function intervalOf(text: string, problem: EntryProblem): number {
  const { ms, problem: said } = checkDuration(text);
  if (said !== undefined) throw problem(['fsyncInterval'], `${said}, got "${text}"`);
  return ms;
}
