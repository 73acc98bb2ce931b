// The file sink's settings (docs/sinks.md#file): its entry in the config file's `sinks:` (the schema
// fragment the file's schema is assembled from, its defaults, its values' formats and the rule that spans
// keys), the `--output-file` flag, and the spec the factory creates the sink from.
import type { FromSchema } from 'json-schema-to-ts';
import { checkDuration } from '../../util/duration.ts';
import { UsageError } from '../../util/errors.ts';
import type { FlagSpec } from '../../util/flag-spec.ts';
import type { Check, Checks } from '../../util/key-checks.ts';
import { parseSize, sizeProblem } from '../../util/size.ts';
import type { ValueFormat } from '../../util/value-format.ts';
import type { CommonEntrySpec, HttpSinkSpec } from '../component.ts';
import type { BacklogOptions } from '../core/backlog.ts';
import { commonKeys, deliveryKeys, duration } from '../core/entry-schema.ts';

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

/** One `sinks:` entry of type file. */
export const fileSinkSchema = {
  type: 'object',
  properties: {
    type: { const: 'file' },
    ...commonKeys,
    // deliveryKeys' deadLetter, not its timeout: a local write has no time limit to set.
    deadLetter: deliveryKeys.deadLetter,
    path: { type: 'string', format: 'file-path' },
    // A size (100MB): the live file is rotated before a line would take it past this.
    maxSize: { type: 'string', format: 'file-max-size' },
    maxFiles: { type: 'integer', minimum: 0, maximum: MAX_MAX_FILES },
    compress: { type: 'boolean' },
    fsync: { type: 'string', enum: FSYNC_POLICIES },
    fsyncInterval: duration,
    // Octal permission bits, as a string ("0640"): YAML would read 0640 as a decimal number.
    mode: { type: 'string', pattern: '^0?[0-7]{3}$', format: 'file-mode' },
    queueCapacity: { type: 'integer', minimum: 1 },
  },
  required: ['type', 'path'],
  additionalProperties: false,
} as const;

export type FileSinkEntry = FromSchema<typeof fileSinkSchema>;

/** What the factory creates a file sink from: every option, defaults applied by the sink. */
export interface FileSinkSpec extends HttpSinkSpec {
  type: 'file';
  path: string;
  maxSize?: number;
  maxFiles?: number;
  compress?: boolean;
  fsync?: FsyncPolicy;
  fsyncIntervalMs?: number;
  mode?: number;
  queue?: BacklogOptions;
}

/** Its path, its rotation size (at least 1KB) and its files' mode (the owner reads and writes). */
export const fileSinkFormats: readonly ValueFormat[] = [
  {
    name: 'file-path',
    problem: (value) =>
      value.trim() === ''
        ? 'is empty: give the file to append the events to (e.g. /var/log/kubediff/events.jsonl)'
        : undefined,
    inFile: (problem) => problem,
  },
  {
    name: 'file-max-size',
    problem: (value) =>
      sizeProblem(value) !== undefined
        ? 'expected a size such as 64MB or 1GB'
        : parseSize('maxSize', value) < MIN_MAX_SIZE
          ? 'must be at least 1KB'
          : undefined,
  },
  {
    // The sink itself must be able to read and write its files (it reads the live file's end at each
    // start); what is not octal at all is the schema's pattern's to say.
    name: 'file-mode',
    problem: (value) =>
      /^0?[0-7]{3}$/.test(value) && (Number.parseInt(value, 8) & 0o600) !== 0o600
        ? 'must give the owner read and write (0600 and up, e.g. "0640")'
        : undefined,
  },
];

const intervalNeedsInterval: Check = (entry, path, { at }) => {
  const { fsync, fsyncInterval } = (entry ?? {}) as { fsync?: unknown; fsyncInterval?: unknown };
  if (fsyncInterval !== undefined && fsync !== undefined && fsync !== 'interval')
    at([...path, 'fsyncInterval'], `applies to fsync: interval, and fsync is ${String(fsync)}`);
};

/** What spans keys: fsyncInterval only with fsync: interval. */
export const fileSinkChecks: Checks = [[[], intervalNeedsInterval]];

export const fileSinkFlags: readonly FlagSpec[] = [
  {
    flags: '--output-file <path>',
    description: 'append every event as a JSON line to this file, rotated at 100MB, 5 kept gzipped',
    more: true,
  },
];

/** `--output-file PATH`: a file sink with every default; a blank path is refused. */
export function fileSpecsFromFlags(values: object): FileSinkSpec[] {
  const given = (values as { outputFile?: string }).outputFile;
  if (given === undefined) return [];
  const path = given.trim();
  if (path === '')
    throw new UsageError(
      '--output-file is empty: give the file to append the events to (e.g. --output-file /var/log/kubediff/events.jsonl).',
    );
  return [{ type: 'file', path }];
}

/** A checked entry as its spec. */
export function fileSpecOf(entry: FileSinkEntry, common: CommonEntrySpec): FileSinkSpec {
  return {
    type: 'file',
    path: entry.path,
    ...common,
    ...(entry.maxSize !== undefined ? { maxSize: parseSize('maxSize', entry.maxSize) } : {}),
    ...(entry.maxFiles !== undefined ? { maxFiles: entry.maxFiles } : {}),
    ...(entry.compress !== undefined ? { compress: entry.compress } : {}),
    ...(entry.fsync !== undefined ? { fsync: entry.fsync } : {}),
    ...(entry.fsyncInterval !== undefined
      ? { fsyncIntervalMs: checkDuration(entry.fsyncInterval).ms ?? 1000 }
      : {}),
    ...(entry.mode !== undefined ? { mode: Number.parseInt(entry.mode, 8) } : {}),
    ...(entry.queueCapacity !== undefined ? { queue: { capacity: entry.queueCapacity } } : {}),
  };
}
