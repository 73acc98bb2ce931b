// How every command of kubediff starts: its failures are thrown to main() (src/cli/main.ts), which says
// them in one sentence and picks the exit code, rather than printed and exited by commander.
import { Command } from 'commander';

export function newCommand(name: string, description: string): Command {
  return new Command(name)
    .description(description)
    .exitOverride()
    .configureOutput({ outputError: () => {} });
}
