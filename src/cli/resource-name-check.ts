// Shared by `watch`, `resources` and `validate --cluster`: what to do with resource names that match
// nothing the server offers.
import type { RedactRule } from '../config/redaction.ts';
import { parseResourceName, resolveResourceName, suggestResourceName } from '../kube/resource-names.ts';
import type { Selection } from '../kube/selection.ts';
import { builtinResourceFor } from '../kube/short-names.ts';
import type { ResourceType } from '../kube/types.ts';
import { UsageError } from '../util/errors.ts';
import type { Logger } from '../util/log.ts';

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

/** Why a name written in a rule matches nothing: a typo (error) or a type that may come later (warning). */
export interface UnknownName {
  severity: 'error' | 'warning';
  message: string;
}

/**
 * Judges a resource name or `*.group` wildcard of a rule against what the server offers: undefined when it
 * names something. A dotted group or a wildcard may be a CRD installed later (a warning); anything else
 * that matches nothing is a typo (an error, with a "did you mean").
 */
export function unknownResourceName(text: string, types: readonly ResourceType[]): UnknownName | undefined {
  const pattern = parseResourceName(text);
  if (pattern.name === '*') {
    const group = pattern.group ?? '';
    if (types.some((type) => type.group === group || type.group.endsWith(`.${group}`))) return undefined;
    return {
      severity: 'warning',
      message: `no resource type of group ${group} is served yet (its CRDs may come later)`,
    };
  }
  if (resolveResourceName(pattern, types).length > 0) return undefined;
  if (pattern.group === undefined && builtinResourceFor(pattern.name)) return undefined;
  if (pattern.group?.includes('.')) {
    return {
      severity: 'warning',
      message: `${text} is not served yet; it is used as soon as its CRD or API appears`,
    };
  }
  const suggestion = suggestResourceName(text, types);
  return {
    severity: 'error',
    message: `unknown resource type ${JSON.stringify(text)}${suggestion ? ` (did you mean ${suggestion}?)` : ''}; run \`kubediff resources\` to list what this cluster offers`,
  };
}

/**
 * The resource names of `redact:` rules, on the first discovery: a typo would leave values in the clear,
 * so it stops kubediff (exit 2) before anything is reported; a type that may come later is a warning.
 */
export function checkRedactRuleNames(rules: readonly RedactRule[], selection: Selection, log: Logger): void {
  const known = [...selection.watched, ...selection.skipped.map((skipped) => skipped.type)];
  for (const rule of rules) {
    for (const text of rule.resources ?? []) {
      const unknown = unknownResourceName(text, known);
      if (!unknown) continue;
      const where = rule.origin ?? `redact rule ${rule.path}`;
      if (unknown.severity === 'warning') log.warn(`${where}: ${unknown.message}.`);
      else throw new UsageError(`${where}: ${unknown.message}; values this rule should hide would be shown.`);
    }
  }
}
