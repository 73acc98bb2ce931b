// Which events one sink receives. A filter is a conjunction of rules, each
// optional: namespaces, resources, event types and change paths. An event is
// delivered when every rule given accepts it. `evaluate` returns a verdict
// with the reason, so that `--explain` can say why an event went where it
// went, and the config file can add rules (globs, path excludes) without
// touching the router.
import { parsePointer } from '../diff/pointer.ts';
import type { ChangeEvent, EventType } from '../diff/types.ts';

/** A filter as a config file or the command line states it. Every field is optional; an absent field accepts all. */
export interface FilterSpec {
  /** Only objects in these namespaces. Cluster-scoped objects do not match, except a Namespace listed by name. */
  namespaces?: readonly string[];
  /**
   * Only these resource types: a plural (`configmaps`), a kind (`ConfigMap`, `configmap`), either one
   * qualified by group (`deployments.apps`, `widgets.example.com`) or by version and group
   * (`deployments.v1.apps`). `core` stands for the core group (`pods.core`).
   */
  resources?: readonly string[];
  /** Only these event types. */
  types?: readonly EventType[];
  /**
   * Only UPDATED events with a change at, below or above one of these JSON Pointers; `*` matches any one
   * segment (`/spec/template/spec/containers/*\/image`). ADDED and DELETED events are not affected.
   */
  paths?: readonly string[];
}

/** Which rule decided. */
export type FilterRule = 'namespaces' | 'resources' | 'types' | 'paths';

export type FilterVerdict =
  | { deliver: true; reason: string }
  | { deliver: false; rule: FilterRule; reason: string };

export interface EventFilter {
  /** The spec this filter was compiled from (for messages and --explain). */
  readonly spec: FilterSpec;
  /** True when the filter accepts every event. */
  readonly acceptsAll: boolean;
  evaluate(event: ChangeEvent): FilterVerdict;
}

interface ResourcePattern {
  text: string;
  name: string;
  group: string | undefined;
  version: string | undefined;
}

/** Compiles a spec; throws one readable sentence for a malformed entry (the caller adds where it came from). */
export function compileFilter(spec: FilterSpec = {}): EventFilter {
  const namespaces = spec.namespaces && spec.namespaces.length > 0 ? new Set(spec.namespaces) : undefined;
  const resources =
    spec.resources && spec.resources.length > 0 ? spec.resources.map(parseResourcePattern) : undefined;
  const types = spec.types && spec.types.length > 0 ? new Set(spec.types) : undefined;
  const paths =
    spec.paths && spec.paths.length > 0
      ? spec.paths.map((path) => ({ text: path, segments: parsePathPattern(path) }))
      : undefined;
  const acceptsAll = !namespaces && !resources && !types && !paths;

  return {
    spec,
    acceptsAll,
    evaluate(event: ChangeEvent): FilterVerdict {
      if (acceptsAll) return { deliver: true, reason: 'the sink has no filter' };
      const accepted: string[] = [];
      if (types) {
        if (!types.has(event.type)) {
          return { deliver: false, rule: 'types', reason: `type ${event.type} is not in ${list(types)}` };
        }
        accepted.push(`type ${event.type}`);
      }
      if (namespaces) {
        const { namespace, kind, name } = event.object;
        if (namespace === undefined) {
          const isListedNamespace = kind === 'Namespace' && namespaces.has(name);
          if (!isListedNamespace) {
            return {
              deliver: false,
              rule: 'namespaces',
              reason: `${kind} ${name} is cluster-scoped and the filter lists namespaces ${list(namespaces)}`,
            };
          }
          accepted.push(`namespace ${name} itself`);
        } else if (!namespaces.has(namespace)) {
          return {
            deliver: false,
            rule: 'namespaces',
            reason: `namespace ${namespace} is not in ${list(namespaces)}`,
          };
        } else {
          accepted.push(`namespace ${namespace}`);
        }
      }
      if (resources) {
        const match = resources.find((pattern) => resourceMatches(pattern, event));
        if (!match) {
          return {
            deliver: false,
            rule: 'resources',
            reason: `${qualifiedResource(event)} is not one of ${resources.map((r) => r.text).join(', ')}`,
          };
        }
        accepted.push(`resource ${match.text}`);
      }
      if (paths && event.type === 'UPDATED') {
        for (const change of event.changes ?? []) {
          const changeSegments = safeSegments(change.path);
          const match = paths.find((pattern) => overlaps(pattern.segments, changeSegments));
          if (match) {
            accepted.push(`change at ${change.path || '(whole object)'} matches ${match.text}`);
            return { deliver: true, reason: accepted.join('; ') };
          }
        }
        return {
          deliver: false,
          rule: 'paths',
          reason: `no change is at or under ${paths.map((p) => p.text).join(', ')}`,
        };
      }
      return { deliver: true, reason: accepted.join('; ') || 'every rule accepts it' };
    },
  };
}

function list(values: ReadonlySet<string>): string {
  return `[${[...values].join(', ')}]`;
}

/** 'deployments.apps', 'configmaps': how kubectl names the event's resource type. */
export function qualifiedResource(event: ChangeEvent): string {
  const group = groupOf(event.object.apiVersion);
  return group === '' ? event.object.resource : `${event.object.resource}.${group}`;
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

function versionOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
}

function parseResourcePattern(text: string): ResourcePattern {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9][A-Za-z0-9.-]*$/.test(trimmed)) {
    throw new Error(
      `${JSON.stringify(text)} is not a resource name: use a plural such as configmaps or deployments.apps`,
    );
  }
  const [name = '', ...rest] = trimmed.toLowerCase().split('.');
  if (rest.length === 0) return { text: trimmed, name, group: undefined, version: undefined };
  const [first = '', ...others] = rest;
  if (/^v\d+((alpha|beta)\d+)?$/.test(first) && others.length > 0) {
    return { text: trimmed, name, group: others.join('.'), version: first };
  }
  return { text: trimmed, name, group: rest.join('.'), version: undefined };
}

function resourceMatches(pattern: ResourcePattern, event: ChangeEvent): boolean {
  const { resource, kind, apiVersion } = event.object;
  if (pattern.name !== resource && pattern.name !== kind.toLowerCase()) return false;
  if (pattern.group !== undefined) {
    const group = groupOf(apiVersion);
    const wanted = pattern.group === 'core' ? '' : pattern.group;
    if (group !== wanted) return false;
  }
  return pattern.version === undefined || pattern.version === versionOf(apiVersion);
}

const ANY_SEGMENT = '*';

function parsePathPattern(path: string): string[] {
  const segments = parsePointer(path);
  if (segments.length === 0) {
    throw new Error('"" is the whole object and matches every change; name a path such as /spec/replicas');
  }
  return segments;
}

function safeSegments(pointer: string): string[] {
  try {
    return parsePointer(pointer);
  } catch {
    return [pointer];
  }
}

/**
 * A change at `change` concerns the pattern when one is a prefix of the other: `/spec/replicas` matches a
 * change at `/spec/replicas` and at `/spec` (the whole spec replaced), and `/spec` matches `/spec/replicas`.
 */
function overlaps(pattern: readonly string[], change: readonly string[]): boolean {
  const common = Math.min(pattern.length, change.length);
  for (let i = 0; i < common; i++) {
    const segment = pattern[i];
    if (segment !== ANY_SEGMENT && segment !== change[i]) return false;
  }
  return true;
}
