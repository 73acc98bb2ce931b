// The cap of the dead-letter files (docs/sinks.md, "Dead letters"): --dead-letter-max-size and
// --dead-letter-max-files, or the config file's deadLetterMaxSize and deadLetterMaxFiles. Sizes are
// written as for the state file (64MB, 500k).

import { DEFAULT_DEAD_LETTER_LIMITS, type DeadLetterLimits } from '../sinks/core/dead-letter.ts';
import { parseCount } from '../util/count.ts';
import { flagSizeBytes } from './flag-values.ts';

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
        : flagSizeBytes('--dead-letter-max-size', ['deadLetterMaxSize'], flags.deadLetterMaxSize),
    maxFiles:
      flags.deadLetterMaxFiles === undefined
        ? DEFAULT_DEAD_LETTER_LIMITS.maxFiles
        : parseCount(
            '--dead-letter-max-files',
            flags.deadLetterMaxFiles,
            `use a whole number of files from 1 to ${MAX_DEAD_LETTER_FILES}, such as 3`,
            MAX_DEAD_LETTER_FILES,
          ),
  };
}

/** Either limit was set. */
export function deadLetterLimitsGiven(flags: RawDeadLetterFlags): boolean {
  return flags.deadLetterMaxSize !== undefined || flags.deadLetterMaxFiles !== undefined;
}
