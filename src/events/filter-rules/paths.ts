// `ignore` and `only`: path rules over an UPDATED's changes. `ignore` removes the changes at or under
// its paths (refusing an UPDATED left with none); `only` passes an UPDATED when one of its changes is at,
// below or above one of its paths, and keeps all its changes. A rule may concern some resource types
// only, and changes made by some field managers only.

import { PathMatcher } from '../../diff/ignore.ts';
import { parsePointer } from '../../diff/pointer.ts';
import type { Change } from '../../diff/types.ts';
import type { ResourceName } from '../../kube/resource-names.ts';
import { plural } from '../../util/count-text.ts';
import type { KubediffEvent } from '../event.ts';
import { type ResourceMatcher, resourcePattern } from '../resource-patterns.ts';
import { changeManager, compileManager } from './managers.ts';
import { type Candidate, type NamePattern, nonEmpty, type Rejection, type Rule, reject } from './rule.ts';

/**
 * A path rule: a JSON Pointer (`*` matches one segment), optionally for some resource types only, and
 * for changes made by some field managers only (globs).
 */
export type PathRule = string | { path: string; resources?: readonly string[]; managers?: readonly string[] };

interface CompiledPathRule {
  text: string;
  segments: string[];
  matcher: PathMatcher;
  /** Absent: every resource. */
  resources: ResourceName[] | undefined;
  /** Absent: changes by any manager (or none known). */
  managers: NamePattern[] | undefined;
}

export function ignoreRule(
  rules: readonly PathRule[] | undefined,
  matches: ResourceMatcher,
): Rule | undefined {
  return pathRule(rules, matches, (candidate, applying) => {
    const { event, changes } = candidate;
    const kept = changes.filter((change) => {
      const segments = safeSegments(change.path);
      return !applying.some((rule) => rule.matcher.matches(segments) && concernsManager(rule, change, event));
    });
    if (kept.length === 0 && changes.length > 0) {
      return reject('ignore', candidate, () => `every change is ignored (${texts(applying)})`);
    }
    if (kept.length < changes.length) {
      candidate.accepted?.push(`${plural(changes.length - kept.length, 'change')} ignored`);
      candidate.changes = kept;
    }
    return undefined;
  });
}

export function onlyRule(rules: readonly PathRule[] | undefined, matches: ResourceMatcher): Rule | undefined {
  return pathRule(rules, matches, (candidate, applying) => {
    for (const change of candidate.changes) {
      const segments = safeSegments(change.path);
      const rule = applying.find(
        (rule) => overlaps(rule.segments, segments) && concernsManager(rule, change, candidate.event),
      );
      if (rule) {
        candidate.accepted?.push(`change at ${change.path || '(whole object)'} matches ${rule.text}`);
        return undefined;
      }
    }
    return reject('only', candidate, () => `no change is at or under ${texts(applying)}`);
  });
}

/**
 * A rule of path rules: `decide` sees the ones that concern the event's resource type (a rule limited to
 * some types concerns only their events); when none does, the rule lets the event through.
 */
function pathRule(
  rules: readonly PathRule[] | undefined,
  matches: ResourceMatcher,
  decide: (candidate: Candidate, applying: readonly CompiledPathRule[]) => Rejection | undefined,
): Rule | undefined {
  const compiled = nonEmpty(rules)?.map(compilePathRule);
  if (!compiled) return undefined;
  return (candidate) => {
    const applying = compiled.filter((rule) => concernsType(rule, candidate.event, matches));
    return applying.length === 0 ? undefined : decide(candidate, applying);
  };
}

function compilePathRule(rule: PathRule): CompiledPathRule {
  const path = typeof rule === 'string' ? rule : rule.path;
  const segments = parsePathPattern(path);
  const resources =
    typeof rule === 'string' || !rule.resources || rule.resources.length === 0
      ? undefined
      : rule.resources.map(resourcePattern);
  const managers =
    typeof rule === 'string' || !rule.managers || rule.managers.length === 0
      ? undefined
      : rule.managers.map(compileManager);
  let text = resources ? `${path} for ${resources.map((r) => r.text).join(', ')}` : path;
  if (managers) text += ` by ${managers.map((m) => m.text).join(', ')}`;
  return { text, segments, matcher: new PathMatcher([path]), resources, managers };
}

function concernsType(rule: CompiledPathRule, event: KubediffEvent, matches: ResourceMatcher): boolean {
  return rule.resources === undefined || rule.resources.some((pattern) => matches(pattern, event));
}

/** A rule limited to managers concerns a change only when its manager is known and one of them. */
function concernsManager(rule: CompiledPathRule, change: Change, event: KubediffEvent): boolean {
  if (!rule.managers) return true;
  const manager = changeManager(change, event);
  return manager !== undefined && rule.managers.some((pattern) => pattern.test(manager));
}

function texts(rules: readonly CompiledPathRule[]): string {
  return rules.map((rule) => rule.text).join(', ');
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
