// `users` and `excludeUsers`: who made the change, as the audit webhook names them in `by.user` and
// `by.impersonatedUser` (names or globs: `system:serviceaccount:argocd:*`).

import { globMatcher } from '../../util/glob.ts';
import type { KubediffEvent } from '../event.ts';
import { listed, type NamePattern, nonEmpty, type Rule, reject } from './rule.ts';

export function usersRule(texts: readonly string[] | undefined): Rule | undefined {
  const users = nonEmpty(texts)?.map(compileUser);
  if (!users) return undefined;
  return (candidate) => {
    const names = usernamesOf(candidate.event);
    const match = users.find((pattern) => names.some((name) => pattern.test(name)));
    if (!match) {
      return reject('users', candidate, () =>
        names.length === 0
          ? `who made it is not known and the filter lists users ${listed(users)}`
          : `user ${names.join(' via ')} is not in ${listed(users)}`,
      );
    }
    candidate.accepted?.push(`user ${match.text}`);
    return undefined;
  };
}

export function excludeUsersRule(texts: readonly string[] | undefined): Rule | undefined {
  const excluded = nonEmpty(texts)?.map(compileUser);
  if (!excluded) return undefined;
  return (candidate) => {
    const names = usernamesOf(candidate.event);
    const match = excluded.find((pattern) => names.some((name) => pattern.test(name)));
    if (!match) return undefined;
    return reject('excludeUsers', candidate, () => `user ${names.join(' via ')} is excluded (${match.text})`);
  };
}

/** A username or a glob over usernames (`*` any run, `?` one character). */
function compileUser(text: string): NamePattern {
  const trimmed = text.trim();
  if (trimmed === '')
    throw new Error('"" is not a username: name a user such as alice@example.com or a glob');
  return { text: trimmed, test: globMatcher(trimmed) };
}

/** Who made the change: the impersonated user first (the identity it was made as), then the one who asked. */
function usernamesOf(event: KubediffEvent): string[] {
  const names: string[] = [];
  if (event.by?.impersonatedUser) names.push(event.by.impersonatedUser.username);
  if (event.by?.user) names.push(event.by.user.username);
  return names;
}
