// `managers` and `excludeManagers`: the field managers (names or globs: `kubectl*`) that made an event,
// as `by.managers` and each change's `manager` name them. `excludeManagers` refuses an ADDED made by one
// and removes their changes from an UPDATED; the manager of a change is also what a path rule's
// `managers` asks about.

import type { Change } from '../../diff/types.ts';
import { managerNameProblem } from '../../kube/managed-fields.ts';
import { plural } from '../../util/count-text.ts';
import { globMatcher } from '../../util/glob.ts';
import type { KubediffEvent } from '../event.ts';
import { listed, type NamePattern, nonEmpty, type Rule, reject } from './rule.ts';

export function managersRule(texts: readonly string[] | undefined): Rule | undefined {
  const managers = nonEmpty(texts)?.map(compileManager);
  if (!managers) return undefined;
  return (candidate) => {
    const { event } = candidate;
    const names = eventManagers(event);
    const match = firstMatch(managers, names);
    if (!match) {
      return reject('managers', candidate, () =>
        names.length === 0
          ? `the ${event.type} names no field manager, and the filter lists managers ${listed(managers)}`
          : `made by ${names.join(', ')}, not by ${listed(managers)}`,
      );
    }
    candidate.accepted?.push(
      `manager ${match.name}${match.pattern.text === match.name ? '' : ` (${match.pattern.text})`}`,
    );
    return undefined;
  };
}

/** `excludeManagers` as two rules: one about who created an object, one about who made each change. */
export function excludeManagersRules(
  texts: readonly string[] | undefined,
): { creator: Rule; changes: Rule } | undefined {
  const excluded = nonEmpty(texts)?.map(compileManager);
  if (!excluded) return undefined;
  const creator: Rule = (candidate) => {
    if (candidate.event.type !== 'ADDED') return undefined;
    const match = firstMatch(excluded, eventManagers(candidate.event));
    if (!match) return undefined;
    return reject(
      'excludeManagers',
      candidate,
      () => `created by ${match.name}, excluded (${match.pattern.text})`,
    );
  };
  const changes: Rule = (candidate) => {
    const { event, changes } = candidate;
    const kept = changes.filter((change) => {
      const manager = changeManager(change, event);
      return manager === undefined || !excluded.some((pattern) => pattern.test(manager));
    });
    if (kept.length === 0 && changes.length > 0) {
      return reject('excludeManagers', candidate, () => {
        const managers = new Set(changes.map((change) => changeManager(change, event)));
        return `every change is made by an excluded manager (${[...managers].join(', ')}; excluded ${listed(excluded)})`;
      });
    }
    if (kept.length < changes.length) {
      candidate.accepted?.push(
        `${plural(changes.length - kept.length, 'change')} by excluded managers dropped`,
      );
      candidate.changes = kept;
    }
    return undefined;
  };
  return { creator, changes };
}

/** A field manager's name or a glob over them; throws one sentence for one that cannot be either. */
export function compileManager(text: string): NamePattern {
  const problem = typeof text === 'string' ? managerNameProblem(text) : 'not a string';
  if (problem) throw new Error(`${JSON.stringify(text)} is ${problem}`);
  const trimmed = text.trim();
  return { text: trimmed, test: globMatcher(trimmed) };
}

/** The manager a change is attributed to: its own, else the event's when it names only one. */
export function changeManager(change: Change, event: KubediffEvent): string | undefined {
  if (change.manager !== undefined) return change.manager;
  const managers = event.by?.managers;
  if (!managers || managers.length === 0) return undefined;
  const first = managers[0]!.manager;
  return managers.every((entry) => entry.manager === first) ? first : undefined;
}

/** Every manager an event names: in `by`, then on its changes. */
function eventManagers(event: KubediffEvent): string[] {
  const names = new Set<string>();
  for (const entry of event.by?.managers ?? []) names.add(entry.manager);
  const changes = event.type === 'OUTCOME' ? [] : (event.changes ?? []);
  for (const change of changes) if (change.manager !== undefined) names.add(change.manager);
  return [...names];
}

/** The first name (in the event's order) that one of the patterns matches, with that pattern. */
function firstMatch(
  patterns: readonly NamePattern[],
  names: readonly string[],
): { pattern: NamePattern; name: string } | undefined {
  for (const name of names) {
    const pattern = patterns.find((candidate) => candidate.test(name));
    if (pattern) return { pattern, name };
  }
  return undefined;
}
