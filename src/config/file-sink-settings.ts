// The config file's `sinks:` as sink specs, joined with the flags' sinks. Each entry (checked by the schema
// and semantic-checks.ts before it gets here) is converted by its type's own function, and the files it
// names (a CA, a key, a password) are read now: one that cannot be is a problem at the entry's key. What
// ties the sinks together (events with nowhere to go, dead-letter settings with no dead-letter file to
// apply to) is checked once all are known, worded for where the setting came from: a flag or a key.

import { readFileSync } from 'node:fs';
import type { CommonEntrySpec, SinkFileReader, SinkProblem } from '../sinks/component.ts';
import { checkedMs } from '../sinks/core/entry-settings.ts';
import type { SinkSpec } from '../sinks/core/setup.ts';
import {
  OUTPUT_COMPONENT,
  sinkComponent,
  sinkDelivers,
  sinkFlagNames,
  typesThatDoNotDeliver,
} from '../sinks/registry.ts';
import type { Env } from '../util/environment.ts';
import { fileReadProblem, UsageError } from '../util/errors.ts';
import { deadLetterLimitsFromFlags, deadLetterLimitsGiven } from './dead-letter-settings.ts';
import type { LoadedConfig } from './file.ts';
import { filterOf } from './filter-settings.ts';
import type { OutputFormat } from './output-format.ts';
import { ConfigError, type KeyPath } from './problems.ts';
import type { ConfigInput, SinkInput } from './schema.ts';
import { DEAD_LETTER_FLAG_WITHOUT_SINK } from './sink-settings.ts';
import type { RawWatchFlags, WatchSettings } from './watch-settings.ts';

/**
 * The file's entry of the standard output's sink (the type -o and `output:` choose: the registry's
 * OUTPUT_COMPONENT), if it lists one: it replaces the sink they would add.
 */
export function outputEntryOf(config: ConfigInput): SinkInput | undefined {
  return (config.sinks ?? []).find((sink) => OUTPUT_COMPONENT?.types.includes(sink.type));
}

/**
 * The file's sinks (its standard output's entry, then the others in their order) before the flags' own,
 * its dead-letter file and cap, and what ties them together.
 */
export function withFileSinks(
  settings: WatchSettings,
  file: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env: Env,
): WatchSettings {
  const config = file.config;
  const listed = outputEntryOf(config);
  const deadLetterFile = flags.deadLetter?.trim() || config.deadLetter;
  const outputSpec =
    listed &&
    OUTPUT_COMPONENT?.fromOutput?.(
      { flag: flags.output, file: config.output, isTTY: stdoutIsTTY, env },
      { entry: listed, common: commonOf(listed, deadLetterFile) },
    );
  const sinks: SinkSpec[] = [
    ...(outputSpec ? [outputSpec] : []),
    ...entrySpecs(file, deadLetterFile, env),
    // Flag sinks take the dead-letter file from delivery.deadLetterFile (createSinks' default).
    ...settings.delivery.sinks,
  ];
  const outputText = flags.output ?? config.output;
  const output: OutputFormat = listed || outputText === 'none' ? 'none' : settings.output;
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

/** Every entry but the standard output's, in the file's order, each with a reader of the files it names. */
function entrySpecs(file: LoadedConfig, deadLetterFile: string | undefined, env: Env): SinkSpec[] {
  const specs: SinkSpec[] = [];
  (file.config.sinks ?? []).forEach((input, index) => {
    const component = sinkComponent(input.type);
    // The schema admits only the registry's types.
    if (!component) throw new Error(`no sink component for type ${String(input.type)}`);
    // The standard output's entry is made by fromOutput (withFileSinks).
    if (!component.spec) return;
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
    specs.push(component.spec(input, commonOf(input, deadLetterFile), { env, readFile, problem }));
  });
  return specs;
}

/** The keys every entry shares, read; its type's component reads the rest. */
function commonOf(input: SinkInput, deadLetter: string | undefined): CommonEntrySpec {
  const timeoutMs = checkedMs('timeout' in input ? input.timeout : undefined);
  const deadLetterFile = ('deadLetter' in input ? input.deadLetter : undefined) ?? deadLetter;
  return {
    ...(input.name ? { name: input.name } : {}),
    ...filterOf(input.filter),
    ...('stories' in input && input.stories !== undefined ? { stories: input.stories } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(deadLetterFile ? { deadLetterFile } : {}),
  };
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
  if (deadLetterFile !== undefined && !sinks.some((sink) => sinkDelivers(sink.type))) {
    if (flags.deadLetter !== undefined) throw new UsageError(DEAD_LETTER_FLAG_WITHOUT_SINK);
    throw problemAt(
      file,
      ['deadLetter'],
      `applies to the sinks that deliver (every type but ${typesThatDoNotDeliver().join(', ')}), and none is listed (${typesThatDoNotDeliver().join(' and ')} has no dead letters)`,
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
  const anyDeadLetterFile = sinks.some(
    (sink) => sinkDelivers(sink.type) && 'deadLetterFile' in sink && sink.deadLetterFile !== undefined,
  );
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
