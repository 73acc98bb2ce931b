// What `watch` writes on stdout, and says on stderr. Read by src/config/settings.ts (RawWatchFlags).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const WATCH_OUTPUT: FlagGroup = {
  title: 'Output',
  flags: [
    {
      flags: '-o, --output <format>',
      description: 'json, pretty (on a terminal) or none (sinks only)',
      choices: ['json', 'pretty', 'none'],
    },
    { flags: '--cluster-name <name>', description: "the events' cluster (default: the context)" },
    {
      flags: '--explain',
      description: 'say on stderr why each sink got each event or not',
      more: true,
    },
  ],
};
