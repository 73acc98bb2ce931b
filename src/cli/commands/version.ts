// `kubediff version`: kubediff's version and the Node.js running it (`--version` prints kubediff's alone).
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { groupedHelp } from '../help.ts';
import { VERSION } from '../version.ts';

export function versionCommand(): Command {
  return groupedHelp(newCommand('version', 'print the version of kubediff and of Node.js')).action(() => {
    process.stdout.write(`kubediff ${VERSION} (node ${process.versions.node})\n`);
  });
}
