// The cap of the dead-letter files (docs/sinks.md, "Dead letters"): --dead-letter-max-size and
// --dead-letter-max-files, or the config file's deadLetterMaxSize and deadLetterMaxFiles. Sizes are
// written as for the state file (64MB, 500k).

import { DEFAULT_DEAD_LETTER_LIMITS, type DeadLetterLimits } from '../sinks/dead-letter.ts';
import { UsageError } from '../util/errors.ts';
import { parseSize } from '../util/size.ts';

/** The flags (or the config file's keys, same spelling as the flags' values). */
export interface RawDeadLetterFlags {
  deadLetterMaxSize?: string;
  deadLetterMaxFiles?: string | number;
}

const MAX_DEAD_LETTER_FILES = 1000;

export function deadLetterLimitsFromFlags(flags: RawDeadLetterFlags): DeadLetterLimits {
  return {
    maxFileBytes:
      flags.deadLetterMaxSize === undefined
        ? DEFAULT_DEAD_LETTER_LIMITS.maxFileBytes
        : parseSize('--dead-letter-max-size', flags.deadLetterMaxSize),
    maxFiles:
      flags.deadLetterMaxFiles === undefined
        ? DEFAULT_DEAD_LETTER_LIMITS.maxFiles
        : parseFileCount(flags.deadLetterMaxFiles),
  };
}

/** Either limit was set. */
export function deadLetterLimitsGiven(flags: RawDeadLetterFlags): boolean {
  return flags.deadLetterMaxSize !== undefined || flags.deadLetterMaxFiles !== undefined;
}

function parseFileCount(value: string | number): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > MAX_DEAD_LETTER_FILES) {
    throw new UsageError(
      `invalid --dead-letter-max-files "${value}": use a whole number of files from 1 to ${MAX_DEAD_LETTER_FILES}, such as 3.`,
    );
  }
  return count;
}
