// Who made a change, as people read it in the terminal and in chat: `by kubectl-set`, `by alice
// (kubectl-set)` when the audit log named the user too, `by alice (kubectl)` from the User-Agent when no
// field manager is known.

import type { Change } from '../diff/types.ts';
import type { ByInfo } from '../events/event.ts';

/**
 * Who made a change, in words: `alice (kubectl-set)` when the user (from the audit log) and the tool are
 * known (the tool: the field managers, else the User-Agent's product), `bob via alice` when alice
 * impersonated bob, the user or the managers alone otherwise; undefined when nobody is named.
 */
export function byText(by: ByInfo | undefined): string | undefined {
  if (!by) return undefined;
  const managers = [...new Set(by.managers?.map((entry) => entry.manager))].join(', ');
  const tool = managers || toolOf(by.userAgent);
  const user = by.user?.username;
  if (user) {
    const acting = by.impersonatedUser ? `${by.impersonatedUser.username} via ${user}` : user;
    return tool ? `${acting} (${tool})` : acting;
  }
  return tool;
}

/** The tool in a User-Agent: `kubectl` from `kubectl/v1.36.3 (linux/amd64) kubernetes/abc`. */
function toolOf(userAgent: string | undefined): string | undefined {
  const tool = userAgent?.split(/[\s/]/, 1)[0];
  return tool ? tool : undefined;
}

/** Whether the changes come from more than one manager: then each change names its own. */
export function changesFromSeveralManagers(changes: readonly Change[]): boolean {
  let first: string | undefined;
  for (const change of changes) {
    if (change.manager === undefined) continue;
    if (first === undefined) first = change.manager;
    else if (change.manager !== first) return true;
  }
  return false;
}
