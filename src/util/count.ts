// Counts given as settings (events, files, connections, a page size): one parser, with the same
// one-sentence error as durations and sizes.
import { invalidSetting } from './errors.ts';

/**
 * `text` as a whole number from 1 to `max`; otherwise a UsageError `invalid <name> "<text>": <hint>.`
 * (`name` is the flag or environment variable it came from).
 */
export function parseCount(
  name: string,
  text: string | number,
  hint: string,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  const count = Number(text);
  if (!Number.isInteger(count) || count < 1 || count > max) throw invalidSetting(name, String(text), hint);
  return count;
}
