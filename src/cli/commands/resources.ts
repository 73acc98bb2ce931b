// `kubediff resources`: what `watch` would watch with the same flags, and why the other types are skipped;
// with --used-by, the workloads that use one ConfigMap or Secret now (docs/used-by.md).
import type { Command } from 'commander';
import type { RawWatchFlags } from '../../config/watch-settings.ts';
import { newCommand } from '../command.ts';
import { CLUSTER_SELECTION } from '../flags/cluster-selection.ts';
import { addFlagGroup, addFlags } from '../flags/flag-spec.ts';
import { CONFIG_FLAG, DEBUG_FLAG, PRESET_FLAG } from '../flags/general.ts';
import { groupedHelp } from '../help.ts';

// --used-by names an object here; the watch's --no-used-by (usedBy: false) is not a flag of this command.
type ResourcesFlags = Omit<RawWatchFlags, 'usedBy'> & { output: 'table' | 'json'; usedBy?: string };

export function resourcesCommand(): Command {
  const command = newCommand('resources', 'list what watch would watch, and what it skips');
  addFlagGroup(command, CLUSTER_SELECTION);
  addFlags(command, [
    {
      flags: '-o, --output <format>',
      description: 'table or json',
      choices: ['table', 'json'],
      defaultValue: 'table',
    },
    {
      flags: '--used-by <object>',
      description: 'what uses configmap/<name> or secret/<name> now',
    },
    CONFIG_FLAG,
    PRESET_FLAG,
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(runResourcesCommand);
}

async function runResourcesCommand(flags: ResourcesFlags): Promise<void> {
  const { output, usedBy, ...selectionFlags } = flags;
  const { loadWatchSettings } = await import('../../config/settings.ts');
  const { httpFromEnvironment } = await import('../../config/tuning.ts');
  // Only the selection matters here: the file's sinks and their secrets are not needed.
  const settings = await loadWatchSettings({ ...selectionFlags, output: 'json' }, false, process.env, {
    unsetVariables: 'warn',
  });
  if (usedBy !== undefined) {
    const [{ runUsedBy }, { stderrLogger }] = await Promise.all([
      import('../resources-used-by.ts'),
      import('../../util/log.ts'),
    ]);
    const log = stderrLogger({ debug: false });
    await runUsedBy(settings, { target: usedBy, output, http: httpFromEnvironment(), log }, process.stdout);
    return;
  }
  const { runResources } = await import('../resources.ts');
  await runResources(settings, { output, http: httpFromEnvironment() }, process.stdout);
}
