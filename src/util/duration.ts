// Durations as people write them, for every flag, config key and environment variable that takes one:
// 500ms, 30s, 5m, 2h, 7d, and sums such as 1h30m or 1.5d. One parser and one wording for the program.
//
// Most durations end up in a Node.js timer, and a timer cannot wait longer than 2^31-1 ms (about 24.8
// days): given more, Node fires it after 1 ms, every time, which turns a long wait into a busy loop. So a
// duration is refused above that, unless it is never a timer (an age, such as --state-max-age). And 0 is
// refused unless it means something: a timeout of 0 is "no timeout" to undici, a backoff of 0 is a spin.
import { invalidSetting } from './errors.ts';

/** The longest wait a Node.js timer supports. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DurationRules {
  /** 0 is meaningful here (e.g. "exit at once"). Default: refused. */
  allowZero?: boolean;
  /** The longest accepted. Default MAX_TIMER_MS; Infinity for a duration that never becomes a timer. */
  maxMs?: number;
}

/** For durations that are compared with timestamps, never waited for: no upper bound. */
export const AGE_RULES: DurationRules = { maxMs: Number.POSITIVE_INFINITY };

const UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1_000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};
const WHOLE = /^(\d+(\.\d+)?(ms|s|m|h|d))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** What the config file says of a value that is not a duration at all (a number, say). */
export const EXPECTED_DURATION = 'expected a duration such as 500ms, 30s, 5m, 2h or 7d';

export type DurationResult = { ms: number; problem?: undefined } | { ms?: undefined; problem: string };

/** Milliseconds, or what is wrong with `text` (a phrase that fits after "key: " or `"value": `). */
export function checkDuration(text: string, rules: DurationRules = {}): DurationResult {
  const trimmed = text.trim();
  if (!WHOLE.test(trimmed)) return { problem: EXPECTED_DURATION };
  let total = 0;
  for (const match of trimmed.matchAll(PART)) total += Number(match[1]) * (UNITS[match[2] ?? ''] ?? 0);
  const ms = Math.round(total);
  const maxMs = rules.maxMs ?? MAX_TIMER_MS;
  if (!Number.isFinite(ms) || ms > maxMs) {
    return {
      problem:
        maxMs === MAX_TIMER_MS
          ? 'expected at most 24d (2147483647ms, the longest a Node.js timer can wait)'
          : `expected at most ${maxMs}ms`,
    };
  }
  if (ms === 0 && !rules.allowZero) return { problem: 'expected a duration longer than 0' };
  return { ms };
}

/**
 * A flag's or environment variable's duration, in ms; a UsageError (exit code 2) naming it otherwise:
 * `invalid --shutdown-timeout "soon": expected a duration such as 500ms, 30s, 5m, 2h or 7d.`
 */
export function parseDurationSetting(name: string, text: string, rules: DurationRules = {}): number {
  const result = checkDuration(text, rules);
  if (result.problem !== undefined) throw invalidSetting(name, text, result.problem);
  return result.ms;
}

/** `ms` for log lines, in the units the parser reads: 500ms, 1.5s, 90s, 5m, 3h, 7d (rounded above a minute). */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1_000;
  if (seconds < 120) return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)}s`;
  if (seconds < 2 * 3_600) return `${Math.round(seconds / 60)}m`;
  if (seconds < 2 * 86_400) return `${Math.round(seconds / 3_600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}
