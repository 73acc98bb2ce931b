// `watch --state`: what was reported, kept in SQLite or PostgreSQL, so that a restart reports what changed
// meanwhile (docs/state.md); `--ui` serves that history as a page (docs/ui.md). Read by
// src/config/state-settings.ts (RawStateFlags) and src/cli/commands/watch.ts (--ui).
import type { FlagGroup } from '../../util/flag-spec.ts';

export const STATE_AND_UI: FlagGroup = {
  title: 'State and UI',
  flags: [
    { flags: '--state <file|url>', description: 'record state in this SQLite file or postgres:// URL' },
    {
      flags: '--state-max-age <duration>',
      description: 'keep history events this long (default: 7d)',
      more: true,
    },
    {
      flags: '--state-max-events <n>',
      description: 'keep at most this many history events (default: 100000)',
      more: true,
    },
    {
      flags: '--state-max-size <size>',
      description: 'keep the state file under about this size (default: 256MB)',
      more: true,
    },
    { flags: '--ui <addr>', description: 'serve the --state history as a web page here' },
    {
      flags: '--ui-token-file <file>',
      description: "require this file's token on the --ui page's API",
      more: true,
    },
    {
      flags: '--ui-allow-no-token',
      description: 'serve the --ui page to other machines without a token',
      more: true,
    },
  ],
};
