// Which changes `watch` reports and how much of each: event types, the start, ignored paths, presets.
// Read by src/config/settings.ts (RawWatchFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';
import { PRESET_FLAG } from './general.ts';

export const WHAT_TO_REPORT: FlagGroup = {
  title: 'What to report',
  flags: [
    { flags: '--events <types>', description: 'only these events: added,updated,deleted' },
    { flags: '--initial', description: 'report existing objects as ADDED at start' },
    {
      flags: '--ignore <path>',
      description: 'ignore changes under this path: /spec/replicas',
      repeatable: true,
    },
    { flags: '--status', description: 'report changes under /status too' },
    {
      flags: '--no-used-by',
      description: 'do not name the workloads each ConfigMap and Secret change reaches',
      more: true,
    },
    PRESET_FLAG,
  ],
};
