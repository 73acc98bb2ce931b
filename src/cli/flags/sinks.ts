// Where `watch` delivers besides stdout: the sink types of the registry (each declares its own rows in its
// folder, src/sinks/registry.ts) and the dead-letter file for what they could not take (docs/sinks.md);
// src/config/sink-settings.ts reads them. Secrets never come from a flag (a flag shows in `ps`): each
// description names the environment variable that carries them.
import { SINK_COMPONENTS } from '../../sinks/registry.ts';
import type { FlagGroup } from '../../util/flag-spec.ts';

export const SINKS: FlagGroup = {
  title: 'Sinks',
  flags: [
    ...SINK_COMPONENTS.flatMap((component) => component.flags ?? []),
    { flags: '--dead-letter <file>', description: 'keep what a sink could not take in this file' },
    {
      flags: '--dead-letter-max-size <size>',
      description: 'rotate the dead-letter file at this size (default: 10MB)',
      more: true,
    },
    {
      flags: '--dead-letter-max-files <n>',
      description: 'keep at most n dead-letter files, the oldest deleted (default: 3)',
      more: true,
    },
    {
      flags: '--shutdown-timeout <duration>',
      description: 'on SIGINT/SIGTERM, time to deliver what is queued (default: 10s)',
      more: true,
    },
  ],
};
