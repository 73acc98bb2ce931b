// A named format of a config value: the JSON Schema `format:` a key of the config file's schema gives
// (src/config/formats.ts registers every one with the validator). One format checks the file's key and
// every flag that sets it, so a value means the same wherever it is written.
import { checkDuration, type DurationRules, EXPECTED_DURATION } from './duration.ts';
import { invalidSetting } from './errors.ts';
import { listenAddressProblem } from './http-server.ts';
import { sizeProblem } from './size.ts';

/** What a format's file message may use: the value, and how the message may quote it. */
export interface FormatContext {
  value: string;
  /** The value as the file's message may show it: never one from the environment, nor a secret whole. */
  shown: string;
}

export interface ValueFormat {
  /** The name a schema's `format:` gives. */
  readonly name: string;
  /**
   * Why `value` does not have this format, a phrase that fits `invalid --flag "value": <phrase>.`;
   * undefined when it does.
   */
  problem(value: string): string | undefined;
  /** The config file's sentence for that problem at a key; default `<problem>, got <shown>`. */
  inFile?(problem: string, context: FormatContext): string;
  /** What a key of this format says of a value that is not a string at all (default: "expected a string"). */
  readonly expected?: string;
}

/** The config file's sentence for `value` of `format`; undefined when it has that format. */
export function formatProblemInFile(format: ValueFormat, context: FormatContext): string | undefined {
  const problem = format.problem(context.value);
  if (problem === undefined) return undefined;
  return format.inFile ? format.inFile(problem, context) : `${problem}, got ${context.shown}`;
}

/** A duration (500ms, 30s, 5m) by `rules` (util/duration.ts). */
export function durationFormat(name: string, rules?: DurationRules, expected?: string): ValueFormat {
  return { name, problem: (value) => checkDuration(value, rules).problem, ...(expected ? { expected } : {}) };
}

/** A size (64MB, 1GB; binary units). */
export const SIZE_FORMAT: ValueFormat = {
  name: 'size',
  problem: sizeProblem,
  inFile: (_problem, { shown }) => `expected a size such as 64MB or 1GB, got ${shown}`,
};

/** A duration of at least 1ms: a window, a timeout that must pass. */
export const DURATION_FORMAT = durationFormat('duration', {}, EXPECTED_DURATION);

/** A timeout, wait or interval of 0 is meaningful: exit at once, join only what has arrived, send at once. */
export const DURATION_OR_ZERO_FORMAT = durationFormat(
  'duration-or-zero',
  { allowZero: true },
  EXPECTED_DURATION,
);

/** Where a server listens: [host]:port. */
export const LISTEN_ADDRESS_FORMAT: ValueFormat = {
  name: 'listen-address',
  problem: listenAddressProblem,
  inFile: (_problem, { shown }) => `expected [host]:port such as :8443, got ${shown}`,
};

/**
 * `value` of `flag` (or of the key a message names), checked by `format`: itself, or a UsageError
 * `invalid --flag "value": <problem>.`. What a component below the config layer checks its flags with,
 * by the format its schema fragment gives the key; the config layer finds the format by the key
 * (config/flag-values.ts).
 */
export function checkedValue(flag: string, format: ValueFormat, value: string): string {
  const problem = format.problem(value);
  if (problem !== undefined) throw invalidSetting(flag, value, problem);
  return value;
}

/** A duration `flag` checked by `format` (its bounds, whether 0 is allowed), in milliseconds. */
export function checkedDurationMs(flag: string, format: ValueFormat, text: string): number {
  checkedValue(flag, format, text);
  return checkDuration(text, { allowZero: true, maxMs: Number.POSITIVE_INFINITY }).ms ?? 0;
}
