// The settings of `kubediff watch`, checked and normalized. Every problem is
// a UsageError (exit code 2) naming the flag, the bad value and the fix.
import { EVENT_TYPES, type EventType } from '../events/event.ts';
import type { FilterSpec } from '../events/filter.ts';
import { labelSelectorProblem } from '../kube/label-selector.ts';
import { parseResourceName, type ResourceName } from '../kube/resource-names.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import { errorMessage, invalidSetting, UsageError } from '../util/errors.ts';
import { hasGlob, namespaceProblem } from '../util/glob.ts';
import {
  deadLetterLimitsFromFlags,
  deadLetterLimitsGiven,
  type RawDeadLetterFlags,
} from './dead-letter-settings.ts';
import {
  checkIgnorePath,
  isPresetName,
  PRESET_NAMES,
  PRESETS,
  type PresetName,
  presetIgnoredPaths,
} from './presets.ts';
import { type RedactionSettings, redactionKeyFrom } from './redaction.ts';
import { type RawSinkFlags, type SinkSettings, sinkSettingsFromFlags } from './sink-settings.ts';
import { type RawStateFlags, type StateSettings, stateSettingsFromFlags } from './state-settings.ts';

/** `none`: no events on stdout (only the sinks: Slack, webhooks). */
type OutputFormat = 'json' | 'pretty' | 'none';

/** The flags as commander hands them over. */
export interface RawWatchFlags extends RawSinkFlags, RawStateFlags, RawDeadLetterFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string[];
  excludeNamespace?: string[];
  resource?: string[];
  excludeResource?: string[];
  selector?: string;
  events?: string;
  initial?: boolean;
  ignore?: string[];
  status?: boolean;
  output?: string;
  clusterName?: string;
  debug?: boolean;
  /** -c/--config: read by src/config/settings.ts, which merges the file under the flags. */
  config?: string;
  preset?: string;
  explain?: boolean;
}

export interface WatchSettings {
  kubeconfig: string | undefined;
  context: string | undefined;
  namespaces: string[];
  excludeNamespaces: string[];
  resources: ResourceName[];
  excludeResources: ResourceName[];
  labelSelector: string | undefined;
  events: ReadonlySet<EventType>;
  initial: boolean;
  /** The ignored paths in force: the defaults (minus /status with --status) plus --ignore. */
  ignoredPaths: string[];
  output: OutputFormat;
  clusterName: string | undefined;
  debug: boolean;
  /** Slack, webhooks, dead letters, shutdown timeout (src/config/sink-settings.ts). */
  delivery: SinkSettings;
  /** The noise preset the ignored paths come from. */
  preset?: PresetName;
  /** --explain: say on stderr why each event was delivered to or kept from each sink. */
  explain?: boolean;
  /**
   * Rules the watch applies to every event before the sinks see it: namespace globs (exact names are
   * server-side field selectors), per-resource path rules and `only` from the config file.
   */
  filter?: FilterSpec;
  /** --state: the state file (catch-up after a restart, `kubediff history`); see docs/state.md. */
  state?: StateSettings;
  /** What is redacted beyond Secrets (`redact:`), and KUBEDIFF_REDACTION_KEY. */
  redaction: RedactionSettings;
}

/** Flags may repeat and may hold comma-separated lists: `-n a -n b` or `-n a,b`. */
function splitList(values: readonly string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((value) => value.split(','))
    .map((value) => value.trim())
    .filter(Boolean);
}

/**
 * `env` holds the sinks' secrets (KUBEDIFF_WEBHOOK_SECRET, KUBEDIFF_SLACK_TOKEN, …); without it (`kubediff
 * resources`), nothing is read from the environment.
 */
export function watchSettingsFromFlags(
  flags: RawWatchFlags,
  stdoutIsTTY: boolean,
  env?: Readonly<Record<string, string | undefined>>,
): WatchSettings {
  const labelSelector = flags.selector?.trim();
  if (labelSelector !== undefined) {
    const problem = labelSelectorProblem(labelSelector);
    if (problem) throw new UsageError(`invalid --selector "${labelSelector}": ${problem}.`);
  }
  const extraIgnores = splitList(flags.ignore);
  for (const path of extraIgnores) {
    try {
      checkIgnorePath(path);
    } catch (error) {
      throw new UsageError(`invalid --ignore path: ${errorMessage(error)}.`);
    }
  }
  const presetName = flags.preset?.trim() ?? 'default';
  if (!isPresetName(presetName)) {
    throw new UsageError(`invalid --preset "${presetName}": use ${PRESET_NAMES.join(', ')}.`);
  }
  const output = parseOutput(flags.output, stdoutIsTTY);
  const delivery = sinkSettingsFromFlags(flags, env ?? {});
  if (deadLetterLimitsGiven(flags) && delivery.deadLetterFile === undefined) {
    throw new UsageError(
      '--dead-letter-max-size and --dead-letter-max-files apply to --dead-letter, and it is not given.',
    );
  }
  delivery.deadLetterLimits = deadLetterLimitsFromFlags(flags);
  if (output === 'none' && delivery.sinks.length === 0) {
    throw new UsageError(
      '--output none leaves events nowhere to go: add --webhook, --slack-webhook or --slack-channel.',
    );
  }
  // Exact namespace names become server-side field selectors; globs are matched client-side.
  const namespaces = namesOf('--namespace', splitList(flags.namespace));
  const excludeNamespaces = namesOf('--exclude-namespace', splitList(flags.excludeNamespace));
  const namespaceGlobs = namespaces.some(hasGlob);
  const excludeGlobs = excludeNamespaces.filter(hasGlob);
  const filter: FilterSpec = {
    ...(namespaceGlobs ? { namespaces } : {}),
    ...(excludeGlobs.length > 0 ? { excludeNamespaces: excludeGlobs } : {}),
  };
  const resources = splitList(flags.resource);
  const state = stateSettingsFromFlags(flags);
  const redactionKey = env ? redactionKeyFrom(env) : undefined;
  const presetExcludes = PRESETS[presetName].excludeResources.filter(
    (name) => !resources.some((wanted) => sameResource(wanted, name)),
  );
  return {
    kubeconfig: flags.kubeconfig,
    context: flags.context,
    namespaces: namespaceGlobs ? [] : namespaces,
    excludeNamespaces: excludeNamespaces.filter((name) => !hasGlob(name)),
    resources: resources.map(parseResourceName),
    excludeResources: [...splitList(flags.excludeResource), ...presetExcludes].map(parseResourceName),
    labelSelector: labelSelector || undefined,
    events: parseEventTypes(flags.events),
    initial: flags.initial ?? false,
    ignoredPaths: presetIgnoredPaths(presetName, flags.status, extraIgnores),
    output,
    clusterName: flags.clusterName,
    debug: flags.debug ?? false,
    delivery,
    preset: presetName,
    explain: flags.explain ?? false,
    ...(Object.keys(filter).length > 0 ? { filter } : {}),
    ...(state ? { state } : {}),
    redaction: { rules: [], ...(redactionKey ? { key: redactionKey } : {}) },
  };
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

function parseEventTypes(text: string | undefined): ReadonlySet<EventType> {
  if (text === undefined) return new Set(EVENT_TYPES);
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

function parseOutput(text: string | undefined, stdoutIsTTY: boolean): OutputFormat {
  if (text === undefined) return stdoutIsTTY ? 'pretty' : 'json';
  if (text === 'json' || text === 'pretty' || text === 'none') return text;
  throw new UsageError(`invalid --output "${text}": use json, pretty or none.`);
}

function namesOf(flag: string, names: string[]): string[] {
  for (const name of names) {
    const problem = namespaceProblem(name);
    if (problem) throw invalidSetting(flag, name, problem);
  }
  return names;
}
