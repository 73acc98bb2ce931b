// The outcome settings of `kubediff watch` (docs/outcomes.md): --no-outcomes, --outcome-timeout, and the
// config file's `outcomes:` block. Outcomes are on by default; the flag can only turn them off.
import { DEFAULT_OUTCOME_TIMEOUT_MS } from '../events/outcomes/outcome-engine.ts';
import { checkDuration } from '../util/duration.ts';
import { flagDurationMs } from './flag-values.ts';

/** The flags as commander hands them over. */
export interface RawOutcomeFlags {
  /** commander's --no-outcomes: false when given. */
  outcomes?: boolean;
  outcomeTimeout?: string;
}

/** The config file's `outcomes:` block (its duration checked by its format, formats.ts). */
export interface OutcomeConfigInput {
  enabled?: boolean | undefined;
  timeout?: string | undefined;
}

export interface OutcomeSettings {
  /** Every rollout followed to its OUTCOME. */
  enabled: boolean;
  /** No verdict within this long after the change: `unknown`. */
  timeoutMs: number;
}

export function outcomeSettingsFrom(
  flags: RawOutcomeFlags,
  config: OutcomeConfigInput | undefined,
): OutcomeSettings {
  return {
    enabled: flags.outcomes !== false && config?.enabled !== false,
    timeoutMs:
      flags.outcomeTimeout !== undefined
        ? flagDurationMs('--outcome-timeout', ['outcomes', 'timeout'], flags.outcomeTimeout)
        : config?.timeout !== undefined
          ? (checkDuration(config.timeout).ms ?? DEFAULT_OUTCOME_TIMEOUT_MS)
          : DEFAULT_OUTCOME_TIMEOUT_MS,
  };
}
