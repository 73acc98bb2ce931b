// Shared by `watch` and `resources`: what to do with -r names that match nothing the server offers.
import { UsageError } from '../errors.ts';
import { suggestResourceName } from '../kube/resource-names.ts';
import type { Selection } from '../kube/selection.ts';
import type { Logger } from '../log.ts';

/**
 * A -r name that matches nothing is a typo (exit 2) unless it names a group
 * with a dot: that is a custom resource whose CRD may be installed later.
 */
export function checkResourceNames(selection: Selection, log: Logger): void {
  const known = [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)];
  for (const name of selection.unresolved) {
    if (name.group?.includes('.')) {
      log.warn(
        `--resource ${name.text}: not served yet; it will be watched as soon as its CRD or API appears.`,
      );
      continue;
    }
    const suggestion = suggestResourceName(name.text, known);
    throw new UsageError(
      `unknown resource type "${name.text}" in --resource${suggestion ? ` (did you mean ${suggestion}?)` : ''}; run \`kubediff resources\` to list what this cluster offers.`,
    );
  }
}
