// Flags (src/util/flag-spec.ts) as commander options, and groups of them as values that commands add, the
// way kubectl's genericclioptions are: `watch` and `resources` add the same cluster selection. What a
// flag's value means is decided further down, by the settings it feeds (src/config).
import { type Command, Option } from 'commander';
import type { FlagGroup, FlagSpec } from '../../util/flag-spec.ts';

/** The heading of the flags that belong to no group (-c, --debug, --help). */
export const GENERAL_HEADING = 'Options:';

const moreOptions = new WeakSet<Option>();

/** Whether `--help` leaves this option to `--help-all`. */
export function isMoreOption(option: Option): boolean {
  return moreOptions.has(option);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function optionOf(spec: FlagSpec): Option {
  const option = new Option(spec.flags, spec.description);
  // A `--no-…` flag that takes a value (`--no-stories <types>`) is a flag of its own, not commander's
  // negation of the flag without `no-`: its value goes to its own name (noStories).
  if (option.negate && option.required) option.negate = false;
  // commander checks choices in the same parser that would collect repeated values: one or the other.
  if (spec.choices && spec.repeatable) throw new Error(`${spec.flags}: choices of a repeatable flag`);
  if (spec.choices) option.choices(spec.choices);
  if (spec.repeatable) option.argParser(collect);
  if (spec.defaultValue !== undefined) option.default(spec.defaultValue);
  if (spec.mandatory) option.makeOptionMandatory();
  if (spec.hidden) option.hideHelp();
  if (spec.more) moreOptions.add(option);
  return option;
}

/** Adds each flag under the general heading. */
export function addFlags(command: Command, specs: readonly FlagSpec[]): Command {
  for (const spec of specs) command.addOption(optionOf(spec).helpGroup(GENERAL_HEADING));
  return command;
}

/** Adds the group's flags under its heading. */
export function addFlagGroup(command: Command, group: FlagGroup): Command {
  for (const spec of group.flags) command.addOption(optionOf(spec).helpGroup(`${group.title}:`));
  return command;
}
