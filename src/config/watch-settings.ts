// The settings of `kubediff watch`: the flags as commander hands them over, and what they become with the
// config file under them, checked and normalized (src/config/settings.ts).

import type { EventType } from '../events/event.ts';
import type { FilterSpec } from '../events/filter.ts';
import type { ResourceName } from '../kube/resource-names.ts';
import type { MemoryBounds } from '../util/memory-budget.ts';
import type { RawWhoFlags } from '../who/config.ts';
import type { AdmissionSettings, AuditSettings } from '../who/settings.ts';
import type { RawDeadLetterFlags } from './dead-letter-settings.ts';
import type { FleetSettings, RawFleetFlags } from './fleet-settings.ts';
import type { OutcomeSettings, RawOutcomeFlags } from './outcome-settings.ts';
import type { OutputFormat } from './output-format.ts';
import type { PresetName } from './presets.ts';
import type { RedactionSettings } from './redaction.ts';
import type { RawSinkFlags, SinkSettings } from './sink-settings.ts';
import type { RawStateFlags, StateSettings } from './state-settings.ts';
import type { RawStoryFlags, StorySettings } from './story-settings.ts';

/** The flags as commander hands them over. */
export interface RawWatchFlags
  extends RawSinkFlags,
    RawStateFlags,
    RawDeadLetterFlags,
    RawWhoFlags,
    RawStoryFlags,
    RawOutcomeFlags,
    RawFleetFlags {
  kubeconfig?: string;
  /** --context: repeatable on `watch` (several clusters), once on `resources`. */
  context?: string | string[];
  /** --all-contexts: every context of the kubeconfig. */
  allContexts?: boolean;
  namespace?: string[];
  excludeNamespace?: string[];
  resource?: string[];
  excludeResource?: string[];
  selector?: string;
  events?: string;
  initial?: boolean;
  ignore?: string[];
  /** --ignore-manager: field managers (globs) whose changes are not reported. */
  ignoreManager?: string[];
  status?: boolean;
  output?: string;
  clusterName?: string;
  debug?: boolean;
  /** -c/--config: the file under the flags (src/config/settings.ts). */
  config?: string;
  preset?: string;
  explain?: boolean;
  /** commander's --no-used-by: false when given (true otherwise: the file decides). */
  usedBy?: boolean;
}

/** What one cluster watches: the global selection, or its own from `clusters:`. */
export interface ClusterSelection {
  namespaces: string[];
  excludeNamespaces: string[];
  resources: ResourceName[];
  excludeResources: ResourceName[];
  labelSelector: string | undefined;
}

/** One entry of the config file's `clusters:` (docs/fleets.md). */
export interface ClusterSettings {
  /** The `cluster` of its events; default: its context's name. */
  name: string | undefined;
  /** Its kubeconfig; default: the global one (--kubeconfig, $KUBECONFIG, …). */
  kubeconfig: string | undefined;
  /** Its context; default: that kubeconfig's current context. */
  context: string | undefined;
  /** What it sets of the selection; the rest is the global selection's. */
  selection: Partial<ClusterSelection>;
  /** It may be down: /readyz is ready without it while it cannot start. */
  optional: boolean;
  /** `replica:`: in a fleet, the replica that alone watches it (docs/fleets.md). */
  replica: string | undefined;
}

export interface WatchSettings {
  kubeconfig: string | undefined;
  /** --context, in order: the clusters to watch, one each ([]: the current context). */
  contexts: string[];
  /** --all-contexts: every context of the kubeconfig, each as its own cluster. */
  allContexts: boolean;
  /** The file's `clusters:` ([]: none, or --context/--all-contexts chose the clusters instead). */
  clusters: ClusterSettings[];
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
  /** The sinks, dead letters, shutdown timeout (src/config/sink-settings.ts). */
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
  /** --fleet: one replica of a fleet that shares the clusters (docs/fleets.md). */
  fleet?: FleetSettings;
  /** What is redacted beyond Secrets (`redact:`), and KUBEDIFF_REDACTION_KEY. */
  redaction: RedactionSettings;
  /** --audit-listen: the audit webhook, to name who made each change (docs/audit.md). */
  audit?: AuditSettings;
  /** --admission-listen: the admission webhook, to name who made each change on any cluster (docs/who.md). */
  admission?: AdmissionSettings;
  /** --peers: the other replicas, which get every record of "who" this one receives (docs/who.md). */
  peers?: string;
  /** Stories: the window, the bounds, and whether the terminal tells them (docs/stories.md). */
  stories: StorySettings;
  /** Outcomes: whether rollouts are followed, and the bound of a verdict (docs/outcomes.md). */
  outcomes: OutcomeSettings;
  /** The memory bounds derived from the heap, for what the settings do not set (docs/deploy.md, "Memory"). */
  memory: MemoryBounds;
  /** What a ConfigMap or Secret change reaches: on unless --no-used-by or `usedBy.enabled: false` (docs/used-by.md). */
  usedBy: { enabled: boolean; maxObjects: number | undefined };
  /** The file's `ui:` block (docs/ui.md); the --ui flags win over it. */
  ui?: { listen?: string | undefined; tokenFile?: string | undefined };
}
