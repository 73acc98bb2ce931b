// A flag, and a group of flags, as plain data: what a command declares (src/cli/flags/) and what a
// component that has flags of its own declares in its folder (a sink type: src/sinks/registry.ts). They
// become commander options in src/cli/flags/flag-spec.ts; what a flag's value means is decided by the
// settings it feeds.

/** One flag. */
export interface FlagSpec {
  /** As commander spells it: `-n, --namespace <ns>`. Its errors quote it, so it never changes. */
  flags: string;
  /** One line of help: what it does and its default. docs/cli.md says the rest. */
  description: string;
  /** May be given several times: every value is kept, in order. */
  repeatable?: boolean;
  /** The only values accepted; commander refuses others before anything runs. */
  choices?: readonly string[];
  defaultValue?: string;
  /** The command cannot run without it. */
  mandatory?: boolean;
  /** Listed by `--help-all` and docs/cli.md, not by `--help`: `--help` keeps to each group's main flags. */
  more?: boolean;
  /** Accepted, never listed: an old spelling docs/cli.md still describes as such. */
  hidden?: boolean;
}

/** Flags that belong together: one heading in `--help`, one section in docs/cli.md. */
export interface FlagGroup {
  /** The heading: `Cluster selection`. */
  title: string;
  flags: readonly FlagSpec[];
}

/** The flags' values as commander hands them over, by camel-cased name (`--dead-letter`: deadLetter). */
export type FlagValues = Readonly<Record<string, unknown>>;

/** The property commander gives a flag's value: `--dead-letter-max-size` (or without `--`) → deadLetterMaxSize. */
export function flagProperty(name: string): string {
  return name.replace(/^--/, '').replace(/-(\w)/g, (_dash, letter: string) => letter.toUpperCase());
}

/** A flag's long name as its messages quote it: `-n, --namespace <ns>` → `--namespace`. */
export function flagName(spec: FlagSpec): string {
  return spec.flags.split(/[\s,]+/).find((part) => part.startsWith('--')) ?? spec.flags;
}
