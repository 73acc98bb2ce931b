// The settings of `kubediff watch` from its two sources, the flags and (with -c) the config file, in one
// pass: each setting is read once, from the flag when it is given and from the file otherwise (lists
// too: `-n a` replaces the file's namespaces), except that --ignore adds to the file's ignore list and
// the sink flags add sinks to the file's. Each value is checked by its key's format in the file's schema
// (formats.ts): a file value by the schema, with its line and column, before it gets here; a flag that
// sets a key by the same format, as it is read (flag-values.ts: a UsageError naming the flag). What ties
// settings together (output none without a sink, a dead-letter file without an HTTP sink) is checked
// last, worded for where the settings came from (file-sink-settings.ts).
import type { EventType } from '../events/event.ts';
import { EVENT_TYPES } from '../events/event.ts';
import type { FilterSpec } from '../events/filter.ts';
import { parseResourceName } from '../kube/resource-names.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import { sinkFlagNames } from '../sinks/registry.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';
import { hasGlob } from '../util/glob.ts';
import { heapLimitBytes, type MemoryBounds, memoryBounds } from '../util/memory-budget.ts';
import { ignoredUsersFrom, whoSettingsFrom } from '../who/config.ts';
import { clustersFrom, contextsFrom } from './cluster-settings.ts';
import { deadLetterLimitsFromFlags, deadLetterLimitsGiven } from './dead-letter-settings.ts';
import type { LoadedConfig, ParseOptions } from './file.ts';
import { outputEntryOf, withFileSinks } from './file-sink-settings.ts';
import { pathRuleOf } from './filter-settings.ts';
import { checkedFlagValue, type SchemaKey } from './flag-values.ts';
import { fleetSettingsFrom } from './fleet-settings.ts';
import { withSinkMemory } from './memory-settings.ts';
import { outcomeSettingsFrom } from './outcome-settings.ts';
import { parseOutput } from './output-format.ts';
import { isPresetName, PRESET_NAMES, PRESETS, type PresetName, presetIgnoredPaths } from './presets.ts';
import { formatKeyPath } from './problems.ts';
import { type RedactRule, redactionKeyFrom } from './redaction.ts';
import type { ConfigInput } from './schema.ts';
import { sinkSettingsFromFlags } from './sink-settings.ts';
import { stateSettingsFromFlags } from './state-settings.ts';
import { storySettingsFrom, withStories } from './story-settings.ts';
import type { RawWatchFlags, WatchSettings } from './watch-settings.ts';

export interface LoadOptions extends ParseOptions {
  /** The heap the memory bounds derive from (util/memory-budget.ts); default: this process's. */
  heapBytes?: number;
}

/**
 * The settings of `watch` from the flags and, with -c, the config file. The file's reader (YAML, the
 * schema validator: megabytes of memory once loaded) is imported only when there is a file.
 */
export async function loadWatchSettings(
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
  options: LoadOptions = {},
): Promise<WatchSettings> {
  let file: LoadedConfig | undefined;
  if (flags.config !== undefined) {
    const { loadConfigFile } = await import('./file.ts');
    file = loadConfigFile(flags.config, env ?? {}, options);
  }
  return resolveWatchSettings(
    flags,
    file,
    stdoutIsTTY,
    env,
    memoryBounds(options.heapBytes ?? heapLimitBytes()),
  );
}

/**
 * The flags alone. `env` holds the sinks' secrets (docs/sinks.md, "Flags and environment variables");
 * without it (`kubediff resources`), nothing is read from the environment.
 */
export function watchSettingsFromFlags(flags: RawWatchFlags, stdoutIsTTY: boolean, env?: Env): WatchSettings {
  return resolveWatchSettings(flags, undefined, stdoutIsTTY, env, memoryBounds(heapLimitBytes()));
}

/** A loaded config file under the flags (`validate` checks a file with no flag at all). */
export function settingsFromConfig(
  loaded: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
): WatchSettings {
  return resolveWatchSettings(flags, loaded, stdoutIsTTY, env, memoryBounds(heapLimitBytes()));
}

/**
 * The steps run in this order, which is also the order in which problems are found: a step that meets
 * one throws it, so the first in this order is the one reported.
 */
function resolveWatchSettings(
  flags: RawWatchFlags,
  file: LoadedConfig | undefined,
  stdoutIsTTY: boolean,
  env: Env | undefined,
  memory: MemoryBounds,
): WatchSettings {
  const config: ConfigInput = file?.config ?? {};
  const labelSelector =
    flags.selector !== undefined
      ? checkedFlagValue('--selector', ['selector'], flags.selector.trim())
      : config.selector;
  const noise = noiseFrom(flags, config);
  const { output, delivery } = destinationsFrom(flags, file, stdoutIsTTY, env);
  const selection = selectionFrom(flags, config, noise.preset);
  const state = stateSettingsFromFlags({
    state: flags.state ?? config.state?.path,
    stateMaxAge: flags.stateMaxAge ?? config.state?.maxAge,
    stateMaxEvents: flags.stateMaxEvents ?? config.state?.maxEvents,
    stateMaxSize: flags.stateMaxSize ?? config.state?.maxSize,
    ...(config.state?.passwordFile !== undefined ? { statePasswordFile: config.state.passwordFile } : {}),
  });
  const fleet = fleetSettingsFrom(flags, config.fleet, state, env ?? process.env);
  const pinned = (config.clusters ?? []).findIndex((cluster) => cluster.replica !== undefined);
  if (pinned >= 0 && !fleet) {
    throw new UsageError(
      `clusters[${pinned}].replica pins a cluster to one replica of a fleet, but no fleet is given; add fleet.name (or --fleet), or drop replica:.`,
    );
  }
  const redactionKey = env ? redactionKeyFrom(env) : undefined;
  const events = flags.events !== undefined ? parseEventTypes(flags.events) : eventTypesOf(config.events);

  const settings: WatchSettings = {
    kubeconfig: flags.kubeconfig ?? config.kubeconfig,
    ...contextsFrom(flags, config),
    clusters: clustersFrom(flags, config, selection.excludedWith),
    namespaces: selection.namespaceGlobs ? [] : selection.namespaces,
    excludeNamespaces: selection.excludeNamespaces.filter((name) => !hasGlob(name)),
    resources: selection.resources.map(parseResourceName),
    excludeResources: selection.excludedWith(selection.resources, selection.excludeResources),
    labelSelector: labelSelector || undefined,
    events,
    initial: flags.initial ?? config.initial ?? false,
    ignoredPaths: presetIgnoredPaths(noise.preset, flags.status ?? config.status, noise.ignores),
    output,
    clusterName: flags.clusterName ?? config.clusterName,
    debug: flags.debug ?? false,
    delivery,
    preset: noise.preset,
    explain: flags.explain ?? false,
    ...(state ? { state } : {}),
    ...(fleet ? { fleet } : {}),
    redaction: { rules: file ? redactRulesOf(file) : [], ...(redactionKey ? { key: redactionKey } : {}) },
    stories: storySettingsFrom(flags, config.stories, output),
    outcomes: outcomeSettingsFrom(flags, config.outcomes),
    memory,
    // commander sets usedBy to true unless --no-used-by is given: only `false` is the flag's word.
    usedBy: {
      enabled: flags.usedBy !== false && (config.usedBy?.enabled ?? true),
      maxObjects: config.usedBy?.maxObjects,
    },
    ...whoSettingsFrom(flags, config, env ?? {}, memory),
    ...(config.ui ? { ui: config.ui } : {}),
    ...watchFilterFrom(flags, config, selection),
  };
  const resolved = file ? withFileSinks(settings, file, flags, stdoutIsTTY, env ?? {}) : settings;
  // Stories last: they apply to every sink, the file's and the flags' (docs/stories.md).
  const storied = resolved.delivery.sinks.map((spec) => withStories(spec, resolved.stories, flags));
  // Then each sink's part of the heap (docs/deploy.md, "Memory").
  const sinks = withSinkMemory(storied, memory, {
    storyBytesGiven: resolved.stories.maxOpenBytesGiven,
    terminalStories: resolved.stories.terminal,
  });
  return { ...resolved, delivery: { ...resolved.delivery, sinks } };
}

/** The ignored paths (the file's, then --ignore's) and the noise preset they start from. */
function noiseFrom(flags: RawWatchFlags, config: ConfigInput): { ignores: string[]; preset: PresetName } {
  const fileIgnores = (config.ignore ?? []).filter((rule): rule is string => typeof rule === 'string');
  const extraIgnores = splitList(flags.ignore).map((path) =>
    checkedFlagValue('--ignore', ['ignore', '[]'], path),
  );
  const preset =
    flags.preset !== undefined ? checkedPreset(flags.preset.trim()) : (config.preset ?? 'default');
  return { ignores: [...fileIgnores, ...extraIgnores], preset };
}

/**
 * The output (-o or `output:`; none when the file lists the standard output's sink, which withFileSinks
 * makes) and the flags' sinks. Without a file, what ties them together is checked here; with one, by
 * withFileSinks once the file's sinks are known.
 */
function destinationsFrom(
  flags: RawWatchFlags,
  file: LoadedConfig | undefined,
  stdoutIsTTY: boolean,
  env: Env | undefined,
): Pick<WatchSettings, 'output' | 'delivery'> {
  const config: ConfigInput = file?.config ?? {};
  const outputText = flags.output ?? config.output;
  const wantsNone = outputText === 'none' || outputEntryOf(config) !== undefined;
  const output = parseOutput(wantsNone && file ? undefined : outputText, stdoutIsTTY, !file);

  // The file's dead-letter file is set later; the flags' own checks must not see the file's sinks as missing.
  const delivery = sinkSettingsFromFlags(
    {
      ...flags,
      shutdownTimeout: flags.shutdownTimeout ?? config.shutdownTimeout,
      ...(file ? { deadLetter: undefined } : {}),
    },
    env ?? {},
  );
  if (!file) {
    if (deadLetterLimitsGiven(flags) && delivery.deadLetterFile === undefined) {
      throw new UsageError(
        '--dead-letter-max-size and --dead-letter-max-files apply to --dead-letter, and it is not given.',
      );
    }
    delivery.deadLetterLimits = deadLetterLimitsFromFlags(flags);
    if (output === 'none' && delivery.sinks.length === 0) {
      throw new UsageError(
        `--output none leaves events nowhere to go: add a sink flag (${sinkFlagNames().join(', ')}).`,
      );
    }
  }
  return { output, delivery };
}

/** The namespaces and resource types to watch and to leave out, from the flags or else the file. */
interface Selection {
  namespaces: string[];
  excludeNamespaces: string[];
  /** Globs are matched client-side (watchFilterFrom); exact names are server-side field selectors. */
  namespaceGlobs: boolean;
  resources: string[];
  excludeResources: string[];
  /**
   * The types left out: the given exclusions, and the preset's noisy types unless `resources` asks for
   * them by name (for the global selection, and for a cluster with types of its own).
   */
  excludedWith: (
    resources: readonly string[] | undefined,
    excludes: readonly string[] | undefined,
  ) => WatchSettings['excludeResources'];
}

function selectionFrom(flags: RawWatchFlags, config: ConfigInput, preset: PresetName): Selection {
  const namespaces =
    flags.namespace !== undefined
      ? checkedList('--namespace', ['namespaces', '[]'], flags.namespace)
      : (config.namespaces ?? []);
  const excludeNamespaces =
    flags.excludeNamespace !== undefined
      ? checkedList('--exclude-namespace', ['excludeNamespaces', '[]'], flags.excludeNamespace)
      : (config.excludeNamespaces ?? []);
  const resources = flags.resource !== undefined ? splitList(flags.resource) : (config.resources ?? []);
  const excludeResources =
    flags.excludeResource !== undefined ? splitList(flags.excludeResource) : (config.excludeResources ?? []);
  const presetExcludesFor = (wanted: readonly string[]) =>
    PRESETS[preset].excludeResources.filter((name) => !wanted.some((typed) => sameResource(typed, name)));
  return {
    namespaces,
    excludeNamespaces,
    namespaceGlobs: namespaces.some(hasGlob),
    resources,
    excludeResources,
    excludedWith: (own, ownExcludes) =>
      [...(ownExcludes ?? excludeResources), ...presetExcludesFor(own ?? resources)].map(parseResourceName),
  };
}

/**
 * The watch's own client-side rules, before any sink's: namespace globs, the field managers and users
 * it ignores, and the file's per-resource ignores and `only`.
 */
function watchFilterFrom(
  flags: RawWatchFlags,
  config: ConfigInput,
  selection: Selection,
): { filter?: FilterSpec } {
  const ignoredUsers = ignoredUsersFrom(flags, config);
  const perResourceIgnores = (config.ignore ?? []).filter((rule) => typeof rule !== 'string').map(pathRuleOf);
  const ignoreManagers =
    flags.ignoreManager !== undefined
      ? checkedList('--ignore-manager', ['ignoreManagers', '[]'], flags.ignoreManager)
      : (config.ignoreManagers ?? []);
  const excludeGlobs = selection.excludeNamespaces.filter(hasGlob);
  const filter: FilterSpec = {
    ...(ignoreManagers.length > 0 ? { excludeManagers: ignoreManagers } : {}),
    ...(selection.namespaceGlobs ? { namespaces: selection.namespaces } : {}),
    ...(excludeGlobs.length > 0 ? { excludeNamespaces: excludeGlobs } : {}),
    ...(perResourceIgnores.length > 0 ? { ignore: perResourceIgnores } : {}),
    ...(config.only && config.only.length > 0 ? { only: config.only.map(pathRuleOf) } : {}),
    ...(ignoredUsers.length > 0 ? { excludeUsers: ignoredUsers } : {}),
  };
  return Object.keys(filter).length > 0 ? { filter } : {};
}

/** Flags may repeat and may hold comma-separated lists: `-n a -n b` or `-n a,b`. */
function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

function checkedPreset(name: string): PresetName {
  if (!isPresetName(name))
    throw new UsageError(`invalid --preset "${name}": use ${PRESET_NAMES.join(', ')}.`);
  return name;
}

/** A list flag's items (repeated or comma-separated), each checked by the format of the list's items. */
function checkedList(flag: string, key: SchemaKey, values: readonly string[]): string[] {
  return splitList(values).map((value) => checkedFlagValue(flag, key, value));
}

/** 'pods' and 'po' and 'pods.core' name the same type as a preset's 'pods'; 'rs' names 'replicasets.apps'. */
function sameResource(typed: string, qualified: string): boolean {
  const name = parseResourceName(typed);
  if (name.group === undefined && builtinResourceFor(name.name) === qualified) return true;
  const [plural = '', ...rest] = qualified.split('.');
  const group = rest.join('.');
  if (name.name !== plural && name.name !== plural.replace(/s$/, '')) return false;
  return name.group === undefined || name.group === group || (group === '' && name.group === 'core');
}

function parseEventTypes(text: string): ReadonlySet<EventType> {
  const types = new Set<EventType>();
  for (const item of splitList([text])) {
    const type = item.toUpperCase() as EventType;
    if (!EVENT_TYPES.includes(type)) {
      throw new UsageError(
        `invalid --events value "${item}": use a comma-separated list of added, updated, deleted.`,
      );
    }
    types.add(type);
  }
  if (types.size === 0)
    throw new UsageError('--events is empty: use a comma-separated list of added, updated, deleted.');
  return types;
}

/** The file's `events:`, which its schema has checked. */
function eventTypesOf(events: readonly string[] | undefined): ReadonlySet<EventType> {
  return new Set(events ? events.map((type) => type.toUpperCase() as EventType) : EVENT_TYPES);
}

/** `redact:` entries, each with where it is written (an unknown resource name in one is reported there). */
function redactRulesOf(loaded: LoadedConfig): RedactRule[] {
  return (loaded.config.redact ?? []).map((input, index) => {
    const rule = typeof input === 'string' ? { path: input } : input;
    const { line, column } = loaded.locate(['redact', index]);
    return {
      path: rule.path,
      ...(rule.resources ? { resources: rule.resources } : {}),
      origin: `${loaded.file}:${line}:${column}: ${formatKeyPath(['redact', index])}`,
    };
  });
}
