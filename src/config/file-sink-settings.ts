// The config file's `sinks:` as sink specs, joined with the flags' sinks. Each entry (checked by
// the schema and semantic-checks.ts before it gets here) is converted by its type's own function, and the files it names
// (a CA, a key, a password) are read now: one that cannot be is a problem at the entry's key. What ties
// the sinks together (events with nowhere to go, dead-letter settings with no dead-letter file to apply
// to) is checked once all are known, worded for where the setting came from: a flag or a key.

import { readFileSync } from 'node:fs';
import type { FilterSpec } from '../events/filter.ts';
import type { EntryContext, SinkFileReader, SinkProblem } from '../sinks/component.ts';
import { checkedMs } from '../sinks/core/entry-settings.ts';
import type { SinkSpec } from '../sinks/core/setup.ts';
import { sinkComponent, sinkFlagNames } from '../sinks/registry.ts';
import type { Env } from '../util/environment.ts';
import { fileReadProblem, UsageError } from '../util/errors.ts';
import { deadLetterLimitsFromFlags, deadLetterLimitsGiven } from './dead-letter-settings.ts';
import type { LoadedConfig } from './file.ts';
import { filterOf } from './filter-settings.ts';
import type { OutputFormat } from './output-format.ts';
import { ConfigError, type KeyPath } from './problems.ts';
import type { SinkInput } from './schema.ts';
import { DEAD_LETTER_FLAG_WITHOUT_SINK } from './sink-settings.ts';
import type { RawWatchFlags, WatchSettings } from './watch-settings.ts';

type StdoutInput = Extract<SinkInput, { type: 'stdout' }>;
type EntryInput = Exclude<SinkInput, { type: 'stdout' }>;
type EntrySpec = Exclude<SinkSpec, { type: 'stdout' }>;

/**
 * The file's sinks (its stdout sink, then the others in their order) before the flags' own, its
 * dead-letter file and cap, and what ties them together.
 */
export function withFileSinks(
  settings: WatchSettings,
  file: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env: Env,
): WatchSettings {
  const config = file.config;
  const stdoutInput = (config.sinks ?? []).find((sink) => sink.type === 'stdout');
  const outputText = flags.output ?? stdoutInput?.format ?? config.output;
  const deadLetterFile = flags.deadLetter?.trim() || config.deadLetter;
  const sinks: SinkSpec[] = [
    ...(stdoutInput && outputText !== 'none'
      ? [stdoutSpecOf(stdoutInput, outputText, stdoutIsTTY, env)]
      : []),
    ...entrySpecs(file, deadLetterFile, env),
    // Flag sinks take the dead-letter file from delivery.deadLetterFile (createSinks' default).
    ...settings.delivery.sinks,
  ];
  const output: OutputFormat = stdoutInput || outputText === 'none' ? 'none' : settings.output;
  checkDestinations(file, flags, output, sinks, deadLetterFile);
  return {
    ...settings,
    output,
    delivery: {
      ...settings.delivery,
      sinks,
      deadLetterFile,
      deadLetterLimits: deadLetterLimitsOf(file, flags, sinks, deadLetterFile),
    },
  };
}

/** The file's stdout sink: its format from -o, else its own, else pretty on a terminal. */
function stdoutSpecOf(
  input: StdoutInput,
  outputText: string | undefined,
  stdoutIsTTY: boolean,
  env: Env,
): SinkSpec {
  const format =
    outputText === 'json' || outputText === 'pretty' ? outputText : stdoutIsTTY ? 'pretty' : 'json';
  return {
    type: 'stdout',
    format,
    color: input.color ?? (stdoutIsTTY && !env.NO_COLOR),
    ...(input.name ? { name: input.name } : {}),
    ...(input.stories !== undefined ? { stories: input.stories } : {}),
    ...filterOf(input.filter),
  };
}

/** Every entry but stdout, in the file's order, each with the reader of the files it names. */
function entrySpecs(file: LoadedConfig, deadLetterFile: string | undefined, env: Env): EntrySpec[] {
  const specs: EntrySpec[] = [];
  (file.config.sinks ?? []).forEach((input, index) => {
    if (input.type === 'stdout') return;
    const readFile: SinkFileReader = (key, name) => {
      try {
        return readFileSync(name, 'utf8');
      } catch (error) {
        throw problemAt(
          file,
          ['sinks', index, ...key],
          `cannot read ${name}: ${fileReadProblem(error)}; fix the path or the file's permissions`,
        );
      }
    };
    const problem: SinkProblem = (key, message) => problemAt(file, ['sinks', index, ...key], message);
    specs.push(entrySpecOf(input, filterOf(input.filter), deadLetterFile, { env, readFile, problem }));
  });
  return specs;
}

/** An entry as a sink spec: the keys every entry shares, then its type's own (ENTRY_CONVERTERS). */
function entrySpecOf(
  input: EntryInput,
  filter: { filter?: FilterSpec },
  deadLetter: string | undefined,
  context: EntryContext,
): EntrySpec {
  const timeoutMs = checkedMs('timeout' in input ? input.timeout : undefined);
  const deadLetterFile = input.deadLetter ?? deadLetter;
  const common = {
    ...(input.name ? { name: input.name } : {}),
    ...filter,
    ...('stories' in input && input.stories !== undefined ? { stories: input.stories } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(deadLetterFile ? { deadLetterFile } : {}),
  };
  const component = sinkComponent(input.type);
  // The schema admits only the registry's types besides stdout.
  if (!component) throw new Error(`no sink component for type ${String(input.type)}`);
  return component.spec(input, common, context);
}

/**
 * Events must go somewhere, and a dead-letter file needs a sink that can fail to deliver. A problem
 * names the flag when a flag set it, else the file's key.
 */
function checkDestinations(
  file: LoadedConfig,
  flags: RawWatchFlags,
  output: OutputFormat,
  sinks: readonly SinkSpec[],
  deadLetterFile: string | undefined,
): void {
  if (output === 'none' && sinks.length === 0) {
    throw new UsageError(
      `${file.file}: output none leaves events nowhere to go: list a sink under sinks:, or add a sink flag (${sinkFlagNames().join(', ')}).`,
    );
  }
  if (deadLetterFile !== undefined && !sinks.some((sink) => sink.type !== 'stdout')) {
    if (flags.deadLetter !== undefined) throw new UsageError(DEAD_LETTER_FLAG_WITHOUT_SINK);
    throw problemAt(
      file,
      ['deadLetter'],
      'applies to the sinks that deliver (every type but stdout), and none is listed (stdout has no dead letters)',
    );
  }
}

/** The cap of the dead-letter files: for the top-level file and each sink's own; flags win over keys. */
function deadLetterLimitsOf(
  file: LoadedConfig,
  flags: RawWatchFlags,
  sinks: readonly SinkSpec[],
  deadLetterFile: string | undefined,
) {
  const config = file.config;
  const limitFlags = {
    deadLetterMaxSize: flags.deadLetterMaxSize ?? config.deadLetterMaxSize,
    deadLetterMaxFiles: flags.deadLetterMaxFiles ?? config.deadLetterMaxFiles,
  };
  const anyDeadLetterFile = sinks.some((sink) => sink.type !== 'stdout' && sink.deadLetterFile !== undefined);
  if (deadLetterLimitsGiven(limitFlags) && deadLetterFile === undefined && !anyDeadLetterFile) {
    if (deadLetterLimitsGiven(flags))
      throw new UsageError(
        '--dead-letter-max-size and --dead-letter-max-files apply to dead-letter files, and none is set (--dead-letter, or deadLetter in the config file).',
      );
    const key = config.deadLetterMaxSize !== undefined ? 'deadLetterMaxSize' : 'deadLetterMaxFiles';
    throw problemAt(file, [key], 'applies to dead-letter files, and none is set (deadLetter)');
  }
  return deadLetterLimitsFromFlags(limitFlags);
}

function problemAt(file: LoadedConfig, path: KeyPath, message: string): ConfigError {
  return new ConfigError(file.file, [{ path, ...file.locate(path), message }]);
}
