// What sink types share in turning their flags, variables and config entries into specs: a variable's
// value, a file a flag names, a checked duration or size, a batch sink's batches and queue.
import { readFileSync } from 'node:fs';
import { checkDuration } from '../../util/duration.ts';
import type { Env } from '../../util/environment.ts';
import { fileReadProblem, UsageError } from '../../util/errors.ts';
import { parseSize } from '../../util/size.ts';
import type { SinkFileReader } from '../component.ts';
import type { BacklogOptions } from './backlog.ts';
import type { HttpTls } from './http.ts';
import { parseHeaders, tlsFromFiles } from './receiver-settings.ts';

/** A variable's value, trimmed; empty counts as unset. */
export function sinkEnvValue(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/** A file a flag names (a CA), read at startup; a UsageError (exit 2) naming the flag when it cannot be. */
export function readFlagFile(flag: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read ${flag} ${file}: ${fileReadProblem(error)}; fix the path or the file's permissions.`,
    );
  }
}

/** A duration the file's checks have already accepted (util/key-checks.ts). */
export function checkedMs(text: string | undefined): number | undefined {
  return text === undefined ? undefined : checkDuration(text, { allowZero: true }).ms;
}

/**
 * batch, batchBytes and queueCapacity, as the batch sinks (OTLP, search, Kafka) take them; batchBytes is a
 * size the file's checks have accepted.
 */
export function batchSettings(input: {
  batch?: number | undefined;
  batchBytes?: string | undefined;
  queueCapacity?: number | undefined;
}): { batchMaxEvents?: number; batchMaxBytes?: number; queue?: BacklogOptions } {
  return {
    ...(input.batch !== undefined ? { batchMaxEvents: input.batch } : {}),
    ...(input.batchBytes !== undefined ? { batchMaxBytes: parseSize('batchBytes', input.batchBytes) } : {}),
    ...(input.queueCapacity !== undefined ? { queue: { capacity: input.queueCapacity } } : {}),
  };
}

/** What the log sinks' (OTLP, search) entries share: headers (and headersFile's), tls, batch and queue. */
export interface BatchSinkEntry {
  headers?: Record<string, string> | undefined;
  headersFile?: string | undefined;
  tls?: { caFile?: string; certFile?: string; keyFile?: string; serverName?: string } | undefined;
  batch?: number | undefined;
  batchBytes?: string | undefined;
  queueCapacity?: number | undefined;
}

/** headers (and headersFile's, read now), tls (its files read now), batch and queue. */
export function batchSinkSettings(
  input: BatchSinkEntry,
  readFile: SinkFileReader,
): {
  headers?: Record<string, string>;
  tls?: HttpTls;
  batchMaxEvents?: number;
  batchMaxBytes?: number;
  queue?: BacklogOptions;
} {
  const fromFile = input.headersFile
    ? parseHeaders(
        readFile(['headersFile'], input.headersFile).split(/\r?\n/),
        `headersFile ${input.headersFile}`,
      )
    : {};
  const headers = { ...fromFile, ...lowerCased(input.headers) };
  const tls = input.tls ? tlsFromFiles(input.tls, readFile) : undefined;
  return {
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    ...(tls ? { tls } : {}),
    ...batchSettings(input),
  };
}

function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]),
  );
}
