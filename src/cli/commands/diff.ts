// `kubediff diff <type>/<name> [--from T1] [--to T2]`, `kubediff diff [type] [-n ns] --since 1h`: what
// changed between two times, as a unified diff of the YAML and the changes with who made them. Exits 1
// when something differs, 0 when nothing does, and 2 on every error (as diff(1) does), so that a script
// can tell "different" from "failed".
import type { Command } from 'commander';
import { newCommand } from '../command.ts';
import { EXIT_DIFFERENCES, EXIT_USAGE, ExitCode, FailureWithCode } from '../exit-codes.ts';
import { addFlags } from '../flags/flag-spec.ts';
import { DEBUG_FLAG } from '../flags/general.ts';
import { HISTORY_SOURCE } from '../flags/history-source.ts';
import { groupedHelp } from '../help.ts';
import type { DiffFlags } from '../object-history/object-diff.ts';

export function diffCommand(): Command {
  const command = newCommand('diff', 'what changed between two times (exit 1: some)').argument(
    '[object]',
    'type/name, a type, or none: all changed in the window',
  );
  addFlags(command, [
    ...HISTORY_SOURCE,
    {
      flags: '-n, --namespace <ns>',
      description: "the object's (default: default), or the window's",
    },
    { flags: '--from <when>', description: 'the older version: a time, a duration ago or an event id' },
    { flags: '--to <when>', description: 'the newer version (default: now)' },
    { flags: '--since <duration>', description: 'the window starts this long ago: 1h (as --from)' },
    DEBUG_FLAG,
  ]);
  return groupedHelp(command).action(async (target: string | undefined, flags: DiffFlags) => {
    let different: boolean;
    try {
      const { runDiff } = await import('../object-history/object-diff.ts');
      different = await runDiff(target, flags, {
        stdout: process.stdout,
        stderr: process.stderr,
        isTTY: process.stdout.isTTY === true,
      });
    } catch (error) {
      throw new FailureWithCode(error, EXIT_USAGE);
    }
    if (different) throw new ExitCode(EXIT_DIFFERENCES);
  });
}
