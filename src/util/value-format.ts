// A named format of a config value: the JSON Schema `format:` a key of the config file's schema gives
// (src/config/formats.ts registers every one with the validator). One format checks the file's key and
// every flag that sets it, so a value means the same wherever it is written.
import { checkDuration, type DurationRules } from './duration.ts';
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
  problem: (value) => sizeProblem(value),
  inFile: (_problem, { shown }) => `expected a size such as 64MB or 1GB, got ${shown}`,
};
