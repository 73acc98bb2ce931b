// -o/--output (and the config file's `output:`): how `kubediff watch` writes events on stdout.
import { UsageError } from '../util/errors.ts';

/** `none`: no events on stdout (only the other sinks). */
export type OutputFormat = 'json' | 'pretty' | 'none';

/** -o: json, pretty or none; without it, pretty on a terminal. `flagOnly`: a bad value names the flag. */
export function parseOutput(text: string | undefined, stdoutIsTTY: boolean, flagOnly: boolean): OutputFormat {
  if (text === undefined) return stdoutIsTTY ? 'pretty' : 'json';
  if (text === 'json' || text === 'pretty' || (flagOnly && text === 'none')) return text;
  throw new UsageError(`invalid --output "${text}": use json, pretty or none.`);
}
