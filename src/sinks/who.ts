// Who made a change, as people read it in the terminal and in chat: `by kubectl-set`, `by alice
// (kubectl-set)` when the audit log named the user too, `by alice` when only the user is known.

import type { Change } from '../diff/types.ts';
import type { ByInfo } from '../events/event.ts';

/** 'kubectl-set', 'alice (kubectl-set)', 'kubectl-set, kubectl'; undefined when nobody is named. */
export function byText(by: ByInfo | undefined): string | undefined {
  if (!by) return undefined;
  const managers = [...new Set(by.managers?.map((entry) => entry.manager))].join(', ');
  const user = by.user?.username;
  if (user && managers) return `${user} (${managers})`;
  return user || managers || undefined;
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
