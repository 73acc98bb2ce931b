// Diagnostics go to stderr, never stdout (which carries only events): one readable line per message on a
// terminal, one JSON object per line elsewhere ({"time","level","msg","component"}), chosen by
// --log-format / $KUBEDIFF_LOG_FORMAT (auto by default). `msg` is the same sentence in both. Text lines
// pass what they quote through printable(), so a message is one line and nothing acts on the terminal.
import { printable } from './terminal-text.ts';
import { isoTimestamp } from './timestamp.ts';

export type LogFields = Record<string, string | number | boolean | undefined>;

export interface Logger {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';

export interface StderrLoggerOptions {
  debug: boolean;
  /** Default: json unless stderr is a terminal ($KUBEDIFF_LOG_FORMAT overrides). */
  format?: LogFormat | 'auto' | undefined;
  /** Where lines go (tests); default process.stderr. */
  write?: (line: string) => void;
  /** Added to every JSON line, e.g. { component: 'leader-election' }. */
  fields?: LogFields;
}

export interface StderrLogger extends Logger {
  error(message: string, fields?: LogFields): void;
  readonly format: LogFormat;
}

export function resolveLogFormat(
  requested: string | undefined,
  isTTY: boolean,
  env: NodeJS.ProcessEnv = process.env,
): LogFormat {
  const value = requested && requested !== 'auto' ? requested : env.KUBEDIFF_LOG_FORMAT || 'auto';
  if (value === 'json' || value === 'text') return value;
  return isTTY ? 'text' : 'json';
}

export function stderrLogger(options: StderrLoggerOptions): StderrLogger {
  const format = resolveLogFormat(options.format, process.stderr.isTTY === true);
  // Once stderr is closed (its reader went away), lines have nowhere to go: dropped, not an error.
  const write =
    options.write ??
    ((line: string) => {
      if (!process.stderr.destroyed) process.stderr.write(line);
    });
  return makeLogger(format, options.debug, write, options.fields ?? {});
}

function makeLogger(
  format: LogFormat,
  debug: boolean,
  write: (line: string) => void,
  baseFields: LogFields,
): StderrLogger {
  const emit = (level: LogLevel, message: string, fields?: LogFields) => {
    if (level === 'debug' && !debug) return;
    write(
      format === 'json' ? jsonLine(level, message, { ...baseFields, ...fields }) : textLine(level, message),
    );
  };
  return {
    format,
    info: (message, fields) => emit('info', message, fields),
    warn: (message, fields) => emit('warn', message, fields),
    debug: (message, fields) => emit('debug', message, fields),
    error: (message, fields) => emit('error', message, fields),
  };
}

function textLine(level: LogLevel, message: string): string {
  const prefix = level === 'info' ? '' : level === 'warn' ? 'warning: ' : `${level}: `;
  return `kubediff: ${prefix}${printable(message)}\n`;
}

/** One JSON object per line; `time`, `level` and `msg` first, extra fields after (never overriding them). */
export function jsonLine(level: LogLevel, message: string, fields: LogFields = {}): string {
  const record: Record<string, unknown> = { time: isoTimestamp(), level, msg: message };
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined && !(key in record)) record[key] = value;
  }
  return `${JSON.stringify(record)}\n`;
}

export const silentLogger: Logger = { info: () => {}, warn: () => {}, debug: () => {} };
