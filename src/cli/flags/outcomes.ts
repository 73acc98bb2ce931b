// Outcomes: every rollout followed to its verdict (docs/outcomes.md). Read by
// src/config/outcome-settings.ts (RawOutcomeFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const OUTCOMES: FlagGroup = {
  title: 'Outcomes',
  flags: [
    { flags: '--no-outcomes', description: 'do not follow rollouts to their OUTCOME', more: true },
    {
      flags: '--outcome-timeout <duration>',
      description: 'no verdict this long after the change: unknown (default: 15m)',
      more: true,
    },
  ],
};
