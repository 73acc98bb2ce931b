// What is redacted beyond Secrets, and how: the config file's `redact:` rules (paths per resource type,
// for ConfigMaps and custom resources that hold credentials) and KUBEDIFF_REDACTION_KEY (a keyed HMAC
// instead of a plain SHA-256). Rules name resource types the way every other rule does (src/events/filter.ts)
// and paths the way `ignore` does (src/diff/ignore.ts).
import { MIN_REDACTION_KEY_LENGTH, Redactor } from '../diff/redact.ts';
import { type ResourceResolver, resourcePatternMatches } from '../events/resource-patterns.ts';
import { parseResourceName } from '../kube/resource-names.ts';
import { apiVersionOf, type ResourceType } from '../kube/types.ts';
import type { Env } from '../util/environment.ts';
import { UsageError } from '../util/errors.ts';

export const REDACTION_KEY_ENV = 'KUBEDIFF_REDACTION_KEY';

/** One `redact:` entry: a JSON Pointer (`*` matches one segment), for some resource types or all. */
export interface RedactRule {
  path: string;
  resources?: readonly string[];
  /** Where the rule is written (`config.yaml:12:5`), for messages. */
  origin?: string;
}

export interface RedactionSettings {
  rules: readonly RedactRule[];
  /** KUBEDIFF_REDACTION_KEY: markers are keyed HMACs. */
  key?: string;
}

/** The key from the environment; empty counts as unset. A UsageError (exit 2) for a key too short to be safe. */
export function redactionKeyFrom(env: Env): string | undefined {
  const key = env[REDACTION_KEY_ENV]?.trim();
  if (!key) return undefined;
  if (key.length < MIN_REDACTION_KEY_LENGTH) {
    throw new UsageError(
      `${REDACTION_KEY_ENV} is ${key.length} characters long, too short to keep hashes from being guessed; use at least ${MIN_REDACTION_KEY_LENGTH} random characters, e.g. \`openssl rand -hex 32\`.`,
    );
  }
  return key;
}

/**
 * The `redact:` paths that apply to a resource type. Resource names are resolved through discovery
 * (`resolve`), so short names and kinds of custom resources work as in every other rule.
 */
export function redactPathsFor(
  rules: readonly RedactRule[],
  resolve?: ResourceResolver,
): (type: ResourceType) => string[] {
  const compiled = rules.map((rule) => ({
    path: rule.path,
    patterns: rule.resources && rule.resources.length > 0 ? rule.resources.map(parseResourceName) : undefined,
  }));
  return (type) => {
    const target = { apiVersion: apiVersionOf(type), resource: type.resource, kind: type.kind };
    return compiled
      .filter(
        (rule) => !rule.patterns || rule.patterns.some((p) => resourcePatternMatches(p, target, resolve)),
      )
      .map((rule) => rule.path);
  };
}

/**
 * What recorded objects depend on (see selectionSignature): the rules and the hashing. Objects recorded
 * with other ones hold other markers, or values that are redacted now: they must not be compared.
 * `version` counts changes of what kubediff itself redacts (2: every annotation of a Secret);
 * `rulesVersion` changes of how rules apply (2: inside the copies annotations hold, annotation-copies.ts),
 * so that only state files recorded with rules take a new baseline.
 */
export function redactionSignature(settings: RedactionSettings): string {
  return JSON.stringify({
    version: 2,
    ...(settings.rules.length > 0 ? { rulesVersion: 2 } : {}),
    hashing: new Redactor(settings.key).id,
    rules: settings.rules
      .map((rule) => JSON.stringify([rule.path, [...(rule.resources ?? [])].sort()]))
      .sort(),
  });
}
