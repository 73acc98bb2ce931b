// Resolves the resource names people type the way kubectl does: plural,
// singular, short name or kind ('deploy', 'deployment', 'Deployment'),
// optionally qualified by group ('deployments.apps', 'widgets.example.com')
// or by version and group ('deployments.v1.apps').
import type { ResourceType } from './types.ts';

export interface ResourceName {
  /** What the user typed, for messages. */
  text: string;
  name: string;
  group: string | undefined;
  version: string | undefined;
}

/** A plural, a singular, a short name or a kind, optionally with .version.group or .group; or `*.group`. */
const RESOURCE_NAME = /^(\*\.[A-Za-z0-9][A-Za-z0-9.-]*|[A-Za-z0-9][A-Za-z0-9.-]*)$/;

/** Why `text` cannot be a resource name, in a phrase; undefined when it can. */
export function resourceNameProblem(text: string): string | undefined {
  if (RESOURCE_NAME.test(text.trim())) return undefined;
  return `${JSON.stringify(text)} is not a resource name: use a plural such as configmaps or deployments.apps, a short name such as deploy, or *.example.com`;
}

/**
 * The parts of a resource name as written: 'deploy', 'deployments.apps', 'deployments.v1.apps',
 * '*.example.com' (name '*': every type of that group and its subgroups). Names and groups are lower-cased;
 * whether such a type exists is for resolveResourceName to say.
 */
export function parseResourceName(text: string): ResourceName {
  const trimmed = text.trim();
  const dot = trimmed.indexOf('.');
  if (dot < 0) return { text: trimmed, name: trimmed.toLowerCase(), group: undefined, version: undefined };
  const name = trimmed.slice(0, dot).toLowerCase();
  const rest = trimmed.slice(dot + 1).toLowerCase();
  const [first, ...others] = rest.split('.');
  // 'deployments.v1.apps': a version between the resource and its group.
  if (first && /^v\d+((alpha|beta)\d+)?$/.test(first) && others.length > 0) {
    return { text: trimmed, name, group: others.join('.'), version: first };
  }
  return { text: trimmed, name, group: rest, version: undefined };
}

function nameMatches(type: ResourceType, name: string): boolean {
  return (
    type.resource === name ||
    type.singularName === name ||
    type.kind.toLowerCase() === name ||
    type.shortNames.includes(name)
  );
}

function groupMatches(type: ResourceType, group: string | undefined): boolean {
  if (group === undefined) return true;
  // kubectl accepts a group's leading part: 'hpa.autoscaling', 'csr.certificates'.
  return (
    type.group === group || type.group.startsWith(`${group}.`) || (group === 'core' && type.group === '')
  );
}

/**
 * The resource types a name stands for. An unqualified name that several
 * groups offer resolves the way kubectl resolves it: the core group first,
 * else the first group in discovery order. Empty when nothing matches.
 */
export function resolveResourceName<T extends ResourceType>(name: ResourceName, types: readonly T[]): T[] {
  // '*.example.com': every type of the group example.com and of its subgroups.
  if (name.name === '*' && name.group !== undefined) {
    const group = name.group;
    return types.filter((type) => type.group === group || type.group.endsWith(`.${group}`));
  }
  const matches = types.filter(
    (type) =>
      nameMatches(type, name.name) &&
      groupMatches(type, name.group) &&
      (name.version === undefined || type.version === name.version),
  );
  if (matches.length <= 1 || name.group !== undefined) return matches;
  // Exact plural names beat short names and kinds ('events' is the core plural, not a short name).
  const byPlural = matches.filter((type) => type.resource === name.name);
  const candidates = byPlural.length > 0 ? byPlural : matches;
  const core = candidates.find((type) => type.group === '');
  return [core ?? (candidates[0] as T)];
}

/** A known name close to `text`, for "did you mean" hints. */
export function suggestResourceName(text: string, types: readonly ResourceType[]): string | undefined {
  const wanted = parseResourceName(text).name;
  let best: { name: string; distance: number } | undefined;
  for (const type of types) {
    for (const candidate of [type.resource, type.singularName, ...type.shortNames]) {
      const distance = editDistance(wanted, candidate);
      if (distance <= Math.max(1, Math.floor(candidate.length / 3)) && (!best || distance < best.distance)) {
        best = { name: type.group ? `${type.resource}.${type.group}` : type.resource, distance };
      }
    }
  }
  return best?.name;
}

export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
