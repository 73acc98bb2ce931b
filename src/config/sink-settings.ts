// The sink flags of `kubediff watch` and their environment variables, checked and turned into sink specs
// by the registry's components (src/sinks/registry.ts). Secrets never come from flags (they would show in
// `ps` and in manifests): each sink type's come from the environment (its component's flags name them).
// Every problem is a UsageError (exit code 2) that names the flag or variable, never the secret itself.

import type { DeadLetterLimits } from '../sinks/core/dead-letter.ts';
import type { SinkSpec } from '../sinks/core/setup.ts';
import { defaultSinkName } from '../sinks/core/sink-name.ts';
import { SINK_COMPONENTS, sinkFlagNames, typesThatDoNotDeliver } from '../sinks/registry.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { flagDurationMs } from './flag-values.ts';

/** The sink flags as commander hands them over. */
export interface RawSinkFlags {
  deadLetter?: string;
  shutdownTimeout?: string;
  /** The flags of the sink types of the registry (src/sinks/registry.ts), by camel-cased name. */
  [flag: string]: unknown;
}

export interface SinkSettings {
  /** The sinks of the flags; stdout is set up from --output. */
  sinks: SinkSpec[];
  deadLetterFile: string | undefined;
  /** The cap of every dead-letter file (default DEFAULT_DEAD_LETTER_LIMITS). */
  deadLetterLimits?: DeadLetterLimits;
  shutdownTimeoutMs: number;
}

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** --dead-letter given, and no sink flag that delivers over the network (from the flags or beside a file). */
export const DEAD_LETTER_FLAG_WITHOUT_SINK = `--dead-letter applies to the deliveries of the sink flags (${sinkFlagNames().join(', ')}), and none is given (${typesThatDoNotDeliver().join(' and ')} has no dead letters).`;

export function sinkSettingsFromFlags(flags: RawSinkFlags, env: Env = process.env): SinkSettings {
  const shutdownTimeoutMs =
    flags.shutdownTimeout === undefined
      ? DEFAULT_SHUTDOWN_TIMEOUT_MS
      : // 0 is meaningful: exit at once, reporting what is still queued.
        flagDurationMs('--shutdown-timeout', ['shutdownTimeout'], flags.shutdownTimeout);
  const sinks = FLAG_SINKS.flatMap((read) => read(flags, env));
  const deadLetterFile = flags.deadLetter?.trim() || undefined;
  if (deadLetterFile !== undefined && sinks.length === 0) {
    throw new UsageError(DEAD_LETTER_FLAG_WITHOUT_SINK);
  }
  return { sinks, deadLetterFile, shutdownTimeoutMs };
}

/**
 * The flags' sinks, one reader per kind, read (and checked) in this order: the order of the sinks, and
 * of the problems reported.
 */
const FLAG_SINKS: readonly ((flags: RawSinkFlags, env: Env) => SinkSpec[])[] = SINK_COMPONENTS.flatMap(
  (component) => (component.fromFlags ? [component.fromFlags] : []),
);

/** For the startup line: where events go, URLs elided. */
export function describeSinkSpec(spec: SinkSpec): string {
  return spec.name || defaultSinkName(spec);
}
