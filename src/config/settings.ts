// The settings of `kubediff watch` from its two sources, the flags and (with -c) the config file, in one
// pass: each setting is read once, from the flag when it is given and from the file otherwise (lists
// too: `-n a` replaces the file's namespaces), except that --ignore adds to the file's ignore list and
// --webhook and --slack-* add sinks to the file's. Each value is checked once, by its concept's one
// checker: a flag here, as it is read (a UsageError naming the flag); a file value by
// semantic-checks.ts, with its line and column, before it gets here. What ties settings together (output none without a sink, a
// dead-letter file without an HTTP sink) is checked last, worded for where the settings came from.
import { readFileSync } from 'node:fs';
import type { EventType } from '../events/event.ts';
import { EVENT_TYPES } from '../events/event.ts';
import type { FilterSpec } from '../events/filter.ts';
import type { PathRule } from '../events/filter-rules/paths.ts';
import { labelSelectorProblem } from '../kube/label-selector.ts';
import { managerNameProblem } from '../kube/managed-fields.ts';
import { parseResourceName } from '../kube/resource-names.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import type { SinkSpec } from '../sinks/setup.ts';
import { errorMessage, fileReadProblem, invalidSetting, UsageError } from '../util/errors.ts';
import { hasGlob, namespaceProblem } from '../util/glob.ts';
import { admissionSettingsFrom, peersFrom } from './admission-settings.ts';
import { auditSettingsFrom, ignoredUsersFrom } from './audit-settings.ts';
import { deadLetterLimitsFromFlags, deadLetterLimitsGiven } from './dead-letter-settings.ts';
import type { LoadedConfig, ParseOptions } from './file.ts';
import { type OutputFormat, parseOutput } from './output-format.ts';
import {
  checkIgnorePath,
  isPresetName,
  PRESET_NAMES,
  PRESETS,
  type PresetName,
  presetIgnoredPaths,
} from './presets.ts';
import { ConfigError, formatKeyPath, type KeyPath } from './problems.ts';
import { type RedactRule, redactionKeyFrom } from './redaction.ts';
import type { ConfigInput, FilterInput, PathRuleInput } from './schema.ts';
import { sinkSettingsFromFlags, sinkSpecOf } from './sink-settings.ts';
import { stateSettingsFromFlags } from './state-settings.ts';
import { storySettingsFrom, withStories } from './story-settings.ts';
import type { ClusterSelection, ClusterSettings, RawWatchFlags, WatchSettings } from './watch-settings.ts';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The settings of `watch` from the flags and, with -c, the config file. The file's reader (YAML, the
 * schema validator: megabytes of memory once loaded) is imported only when there is a file.
 */
export async function loadWatchSettings(
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
  options: ParseOptions = {},
): Promise<WatchSettings> {
  let file: LoadedConfig | undefined;
  if (flags.config !== undefined) {
    const { loadConfigFile } = await import('./file.ts');
    file = loadConfigFile(flags.config, env ?? {}, options);
  }
  return resolveWatchSettings(flags, file, stdoutIsTTY, env);
}

/**
 * The flags alone. `env` holds the sinks' secrets (KUBEDIFF_WEBHOOK_SECRET, KUBEDIFF_SLACK_TOKEN, …);
 * without it (`kubediff resources`), nothing is read from the environment.
 */
export function watchSettingsFromFlags(flags: RawWatchFlags, stdoutIsTTY: boolean, env?: Env): WatchSettings {
  return resolveWatchSettings(flags, undefined, stdoutIsTTY, env);
}

/** A loaded config file under the flags (`validate` checks a file with no flag at all). */
export function settingsFromConfig(
  loaded: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Env,
): WatchSettings {
  return resolveWatchSettings(flags, loaded, stdoutIsTTY, env);
}

function resolveWatchSettings(
  flags: RawWatchFlags,
  file: LoadedConfig | undefined,
  stdoutIsTTY: boolean,
  env: Env | undefined,
): WatchSettings {
  const config: ConfigInput = file?.config ?? {};
  const fileSinks = config.sinks ?? [];
  const stdoutInput = fileSinks.find((sink) => sink.type === 'stdout');

  const labelSelector =
    flags.selector !== undefined ? checkedSelector(flags.selector.trim()) : config.selector;
  const fileIgnores = (config.ignore ?? []).filter((rule): rule is string => typeof rule === 'string');
  const extraIgnores = checkedIgnores(splitList(flags.ignore));
  const presetName =
    flags.preset !== undefined ? checkedPreset(flags.preset.trim()) : (config.preset ?? 'default');

  // stdout: the file's stdout sink (its format from -o or its own), or the implicit one from -o/output.
  const outputText = flags.output ?? stdoutInput?.format ?? config.output;
  const wantsNone = outputText === 'none' || stdoutInput !== undefined;
  const output = parseOutput(wantsNone && file ? undefined : outputText, stdoutIsTTY, !file);

  // The file's dead-letter file is set below; the flags' own checks must not see the file's sinks as missing.
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
        '--output none leaves events nowhere to go: add --webhook, --slack-webhook, --slack-channel, --kafka-brokers or another chat webhook.',
      );
    }
  }

  // Exact namespace names become server-side field selectors; globs are matched client-side.
  const namespaces =
    flags.namespace !== undefined
      ? checkedNamespaces('--namespace', flags.namespace)
      : (config.namespaces ?? []);
  const excludeNamespaces =
    flags.excludeNamespace !== undefined
      ? checkedNamespaces('--exclude-namespace', flags.excludeNamespace)
      : (config.excludeNamespaces ?? []);
  const namespaceGlobs = namespaces.some(hasGlob);
  const excludeGlobs = excludeNamespaces.filter(hasGlob);
  const resources = flags.resource !== undefined ? splitList(flags.resource) : (config.resources ?? []);
  const excludeResources =
    flags.excludeResource !== undefined ? splitList(flags.excludeResource) : (config.excludeResources ?? []);
  const state = stateSettingsFromFlags({
    state: flags.state ?? config.state?.path,
    stateMaxAge: flags.stateMaxAge ?? config.state?.maxAge,
    stateMaxEvents: flags.stateMaxEvents ?? config.state?.maxEvents,
    stateMaxSize: flags.stateMaxSize ?? config.state?.maxSize,
    ...(config.state?.passwordFile !== undefined ? { statePasswordFile: config.state.passwordFile } : {}),
  });
  const redactionKey = env ? redactionKeyFrom(env) : undefined;
  const events = flags.events !== undefined ? parseEventTypes(flags.events) : eventTypesOf(config.events);
  // The preset's noisy types, unless asked for by name.
  const presetExcludesFor = (wanted: readonly string[]) =>
    PRESETS[presetName].excludeResources.filter((name) => !wanted.some((typed) => sameResource(typed, name)));
  const presetExcludes = presetExcludesFor(resources);

  const settings: WatchSettings = {
    kubeconfig: flags.kubeconfig ?? config.kubeconfig,
    ...contextsFrom(flags, config),
    // A cluster's own types or exclusions, in place of the global ones.
    clusters: clustersFrom(flags, config, (own, ownExcludes) =>
      [...(ownExcludes ?? excludeResources), ...presetExcludesFor(own ?? resources)].map(parseResourceName),
    ),
    namespaces: namespaceGlobs ? [] : namespaces,
    excludeNamespaces: excludeNamespaces.filter((name) => !hasGlob(name)),
    resources: resources.map(parseResourceName),
    excludeResources: [...excludeResources, ...presetExcludes].map(parseResourceName),
    labelSelector: labelSelector || undefined,
    events,
    initial: flags.initial ?? config.initial ?? false,
    ignoredPaths: presetIgnoredPaths(presetName, flags.status ?? config.status, [
      ...fileIgnores,
      ...extraIgnores,
    ]),
    output,
    clusterName: flags.clusterName ?? config.clusterName,
    debug: flags.debug ?? false,
    delivery,
    preset: presetName,
    explain: flags.explain ?? false,
    ...(state ? { state } : {}),
    redaction: { rules: file ? redactRulesOf(file) : [], ...(redactionKey ? { key: redactionKey } : {}) },
    stories: storySettingsFrom(flags, config.stories, output),
  };
  const audit = auditSettingsFrom(flags, config.audit, env ?? {});
  if (audit) settings.audit = audit;
  const admission = admissionSettingsFrom(flags, config.admission, env ?? {});
  if (admission) settings.admission = admission;
  const peers = peersFrom(flags, config.peers, [admission?.listen, audit?.listen]);
  if (peers) settings.peers = peers;
  if (config.ui) settings.ui = config.ui;
  const ignoredUsers = ignoredUsersFrom(flags, config);
  // The watch's own client-side rules: namespace globs, and the file's per-resource ignores and `only`.
  const perResourceIgnores = (config.ignore ?? []).filter((rule) => typeof rule !== 'string').map(pathRuleOf);
  const ignoreManagers =
    flags.ignoreManager !== undefined
      ? checkedManagers(splitList(flags.ignoreManager))
      : (config.ignoreManagers ?? []);
  const filter: FilterSpec = {
    ...(ignoreManagers.length > 0 ? { excludeManagers: ignoreManagers } : {}),
    ...(namespaceGlobs ? { namespaces } : {}),
    ...(excludeGlobs.length > 0 ? { excludeNamespaces: excludeGlobs } : {}),
    ...(perResourceIgnores.length > 0 ? { ignore: perResourceIgnores } : {}),
    ...(config.only && config.only.length > 0 ? { only: config.only.map(pathRuleOf) } : {}),
    ...(ignoredUsers.length > 0 ? { excludeUsers: ignoredUsers } : {}),
  };
  if (Object.keys(filter).length > 0) settings.filter = filter;
  const resolved = file ? withFileSinks(settings, file, flags, stdoutIsTTY, env ?? {}) : settings;
  // Stories last: they apply to every sink, the file's and the flags' (docs/stories.md).
  const sinks = resolved.delivery.sinks.map((spec) => withStories(spec, resolved.stories, flags));
  return { ...resolved, delivery: { ...resolved.delivery, sinks } };
}

/**
 * The file's sinks (its stdout sink, then its HTTP sinks) before the flags' own, its dead-letter file and
 * cap, and what ties them together.
 */
function withFileSinks(
  settings: WatchSettings,
  file: LoadedConfig,
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env: Env,
): WatchSettings {
  const config = file.config;
  const fileSinks = config.sinks ?? [];
  const stdoutInput = fileSinks.find((sink) => sink.type === 'stdout');
  const outputText = flags.output ?? stdoutInput?.format ?? config.output;
  const deadLetterFile = flags.deadLetter?.trim() || config.deadLetter;
  const sinks: SinkSpec[] = [];
  if (stdoutInput && outputText !== 'none') {
    const format =
      outputText === 'json' || outputText === 'pretty' ? outputText : stdoutIsTTY ? 'pretty' : 'json';
    sinks.push({
      type: 'stdout',
      format,
      color: stdoutInput.color ?? (stdoutIsTTY && !env.NO_COLOR),
      ...(stdoutInput.name ? { name: stdoutInput.name } : {}),
      ...(stdoutInput.stories !== undefined ? { stories: stdoutInput.stories } : {}),
      ...filterOf(stdoutInput.filter),
    });
  }
  fileSinks.forEach((input, index) => {
    if (input.type === 'stdout') return;
    const readFile = (key: KeyPath, name: string): string => {
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
    sinks.push(sinkSpecOf(input, filterOf(input.filter), deadLetterFile, env, readFile));
  });
  // Flag sinks take the dead-letter file from delivery.deadLetterFile (createSinks' default).
  sinks.push(...settings.delivery.sinks);

  const output: OutputFormat = stdoutInput || outputText === 'none' ? 'none' : settings.output;
  if (output === 'none' && sinks.length === 0) {
    throw new UsageError(
      `${file.file}: output none leaves events nowhere to go: list a sink under sinks:, or add --webhook or --slack-webhook.`,
    );
  }
  if (deadLetterFile !== undefined && !sinks.some((sink) => sink.type !== 'stdout')) {
    if (flags.deadLetter !== undefined)
      throw new UsageError(
        '--dead-letter applies to --webhook, Slack and Kafka deliveries, and none is given (stdout has no dead letters).',
      );
    throw problemAt(
      file,
      ['deadLetter'],
      'applies to webhook, chat and Kafka sinks, and none is listed (stdout has no dead letters)',
    );
  }

  // The cap of the dead-letter files: for the top-level file and each sink's own.
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
  return {
    ...settings,
    output,
    delivery: {
      ...settings.delivery,
      sinks,
      deadLetterFile,
      deadLetterLimits: deadLetterLimitsFromFlags(limitFlags),
    },
  };
}

function problemAt(file: LoadedConfig, path: KeyPath, message: string): ConfigError {
  return new ConfigError(file.file, [{ path, ...file.locate(path), message }]);
}

/** Flags may repeat and may hold comma-separated lists: `-n a -n b` or `-n a,b`. */
/**
 * Which clusters: --context (repeatable) or --all-contexts, else the file's `contexts:` (or `context:`)
 * or `allContexts:`. A context named twice, or named beside "all", is a mistake the user must see, not
 * one we guess around; so is one cluster name for several clusters.
 */
function contextsFrom(
  flags: RawWatchFlags,
  config: ConfigInput,
): Pick<WatchSettings, 'contexts' | 'allContexts'> {
  const fromFlags = flags.context !== undefined || flags.allContexts !== undefined;
  const named = fromFlags
    ? { list: '--context', all: '--all-contexts' }
    : { list: 'contexts:', all: 'allContexts:' };
  if (!fromFlags && config.context !== undefined && config.contexts !== undefined) {
    throw new UsageError(
      'the config file has both context: and contexts:; keep contexts: (a list) and drop context:.',
    );
  }
  const given = fromFlags
    ? [flags.context ?? []].flat()
    : (config.contexts ?? (config.context !== undefined ? [config.context] : []));
  const allContexts = (fromFlags ? flags.allContexts : config.allContexts) ?? false;
  if (allContexts && given.length > 0) {
    throw new UsageError(
      `${named.list} and ${named.all} both choose the clusters to watch; pass one of them, not both.`,
    );
  }
  const twice = given.find((name, index) => given.indexOf(name) !== index);
  if (twice !== undefined) {
    throw new UsageError(`${named.list} "${twice}" is given twice; name each context once.`);
  }
  const clusterName =
    flags.clusterName !== undefined
      ? '--cluster-name'
      : config.clusterName !== undefined
        ? 'clusterName:'
        : undefined;
  if (clusterName && (allContexts || given.length > 1)) {
    throw new UsageError(
      `${clusterName} names one cluster, but several contexts are watched; each cluster is named after its context, so drop ${clusterName.replace(/:$/, '')}.`,
    );
  }
  return { contexts: given, allContexts };
}

/**
 * The file's `clusters:` (checked in semantic-checks.ts). --context and --all-contexts choose the clusters instead,
 * as flags win over the file; a selection flag (-n, -r, …) wins over every cluster's own key.
 */
function clustersFrom(
  flags: RawWatchFlags,
  config: ConfigInput,
  excludedWith: (
    resources: readonly string[] | undefined,
    excludes: readonly string[] | undefined,
  ) => WatchSettings['excludeResources'],
): ClusterSettings[] {
  if (!config.clusters || flags.context !== undefined || flags.allContexts !== undefined) return [];
  return config.clusters.map((entry) => {
    const selection: Partial<ClusterSelection> = {};
    if (flags.namespace === undefined && entry.namespaces) selection.namespaces = entry.namespaces;
    if (flags.excludeNamespace === undefined && entry.excludeNamespaces)
      selection.excludeNamespaces = entry.excludeNamespaces;
    const resources = flags.resource === undefined ? entry.resources : undefined;
    const excludes = flags.excludeResource === undefined ? entry.excludeResources : undefined;
    if (resources) selection.resources = resources.map(parseResourceName);
    // Its own types, or its own exclusions: the preset's noisy types stay out unless it names them.
    if (resources || excludes) selection.excludeResources = excludedWith(resources, excludes);
    if (flags.selector === undefined && entry.selector !== undefined)
      selection.labelSelector = entry.selector.trim() || undefined;
    return {
      name: entry.name,
      kubeconfig: entry.kubeconfig,
      context: entry.context,
      selection,
      optional: entry.optional ?? false,
    };
  });
}

function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

function checkedSelector(selector: string): string {
  const problem = labelSelectorProblem(selector);
  if (problem) throw new UsageError(`invalid --selector "${selector}": ${problem}.`);
  return selector;
}

function checkedIgnores(paths: string[]): string[] {
  for (const path of paths) {
    try {
      checkIgnorePath(path);
    } catch (error) {
      throw new UsageError(`invalid --ignore path: ${errorMessage(error)}.`);
    }
  }
  return paths;
}

function checkedPreset(name: string): PresetName {
  if (!isPresetName(name))
    throw new UsageError(`invalid --preset "${name}": use ${PRESET_NAMES.join(', ')}.`);
  return name;
}

function checkedNamespaces(flag: string, values: readonly string[]): string[] {
  const names = splitList(values);
  for (const name of names) {
    const problem = namespaceProblem(name);
    if (problem) throw invalidSetting(flag, name, problem);
  }
  return names;
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

function pathRuleOf(rule: PathRuleInput): PathRule {
  return typeof rule === 'string'
    ? rule
    : {
        path: rule.path,
        ...(rule.resources ? { resources: rule.resources } : {}),
        ...(rule.managers ? { managers: rule.managers } : {}),
      };
}

/** --ignore-manager values: field manager names or globs. */
function checkedManagers(values: readonly string[]): string[] {
  for (const value of values) {
    const problem = managerNameProblem(value);
    if (problem) throw new UsageError(`invalid --ignore-manager ${JSON.stringify(value)}: ${problem}.`);
  }
  return values.map((value) => value.trim());
}

/** The `filter:` of a sink, as a SinkSpec field. */
function filterOf(input: FilterInput | undefined): { filter?: FilterSpec } {
  if (!input) return {};
  const filter: FilterSpec = {
    ...(input.namespaces ? { namespaces: input.namespaces } : {}),
    ...(input.excludeNamespaces ? { excludeNamespaces: input.excludeNamespaces } : {}),
    ...(input.resources ? { resources: input.resources } : {}),
    ...(input.excludeResources ? { excludeResources: input.excludeResources } : {}),
    ...(input.events ? { types: input.events.map((type) => type.toUpperCase() as EventType) } : {}),
    ...(input.ignore ? { ignore: input.ignore.map(pathRuleOf) } : {}),
    ...(input.only ? { only: input.only.map(pathRuleOf) } : {}),
    ...(input.managers ? { managers: input.managers } : {}),
    ...(input.excludeManagers ? { excludeManagers: input.excludeManagers } : {}),
    ...(input.users ? { users: input.users } : {}),
    ...(input.excludeUsers ? { excludeUsers: input.excludeUsers } : {}),
  };
  return Object.keys(filter).length > 0 ? { filter } : {};
}
