// The form in which the informer store keeps an object and the diff compares it: Secret values and
// the `redact:` paths hashed (in the copies annotations hold too), ignored subtrees gone (they are never reported, so keeping them only
// costs memory). How an object is normalized depends on its resource type, never on what the object
// says it is.

import type { JsonObject, JsonValue, KubeObject, ResourceType } from '../kube/types.ts';
import { redactAnnotationCopies } from './annotation-copies.ts';
import { type MatchCursor, PathMatcher } from './ignore.ts';
import { setProperty } from './json.ts';
import { isSecretType, type Redactor, redactSecret } from './redact.ts';

/** How the objects of one resource type are normalized. */
export interface NormalizeRules {
  ignore: PathMatcher;
  /** The config file's `redact:` paths that apply to this type: their values become markers. */
  redact: PathMatcher;
  /** The type is the core group's `secrets`: data, stringData and annotations become markers. */
  secret: boolean;
  redactor: Redactor;
}

/**
 * Redacts (a Secret's values, then the `redact:` paths, each only when there is one), then drops the
 * subtrees `ignore` matches: a pass each, over the parts of the object it can reach. The input is
 * never mutated.
 *
 * Structural sharing: a subtree no pattern can reach, or in which nothing was dropped or redacted,
 * is shared with the input rather than copied (an object in which nothing matches is returned as
 * is). That is safe because objects come from JSON.parse and nothing mutates them afterwards;
 * anything holding a normalized object must treat it as read-only too.
 */
export function normalizeObject(obj: KubeObject | JsonObject, rules: NormalizeRules): JsonObject {
  let result = asJsonObject(obj);
  if (rules.secret) result = redactSecret(result, rules.redactor);
  if (!rules.redact.isEmpty) result = redactPaths(result, rules);
  if (!rules.ignore.isEmpty) result = rewriteObject(result, rules.ignore.start(), rules.ignore, drop);
  return result;
}

/**
 * The `redact:` paths of a type that is not a Secret hashed, in the object and in the copies of it that
 * tools keep in its annotations (annotation-copies.ts: the same paths inside each copy). A Secret's
 * annotations are hashed whole already.
 */
function redactPaths(obj: JsonObject, rules: NormalizeRules): JsonObject {
  const withCopies = rules.secret
    ? obj
    : redactAnnotationCopies(obj, (copy) => redactPaths(copy, rules), rules.redactor);
  const marker = (value: JsonValue) => rules.redactor.marker(value);
  return rewriteObject(withCopies, rules.redact.start(), rules.redact, marker);
}

export interface NormalizerOptions {
  ignore: PathMatcher;
  redactor: Redactor;
  /** The `redact:` paths that apply to a resource type (config file rules matched by resource name). */
  redactPaths?: (type: ResourceType) => readonly string[];
}

/**
 * normalizeObject with the rules of each resource type, worked out once per type: an informer's
 * objects are all normalized alike for its whole life, so two versions of an object always compare.
 */
export class Normalizer {
  readonly #options: NormalizerOptions;
  readonly #rules = new WeakMap<ResourceType, NormalizeRules>();
  readonly #noPaths = new PathMatcher([]);

  constructor(options: NormalizerOptions) {
    this.#options = options;
  }

  normalize(type: ResourceType, obj: KubeObject | JsonObject): JsonObject {
    return normalizeObject(obj, this.rulesFor(type));
  }

  rulesFor(type: ResourceType): NormalizeRules {
    let rules = this.#rules.get(type);
    if (!rules) {
      const paths = this.#options.redactPaths?.(type) ?? [];
      rules = {
        ignore: this.#options.ignore,
        redact: paths.length > 0 ? new PathMatcher(paths) : this.#noPaths,
        secret: isSecretType(type),
        redactor: this.#options.redactor,
      };
      this.#rules.set(type, rules);
    }
    return rules;
  }
}

/**
 * KubeObject declares its optional fields as `| undefined`, but an object parsed from JSON never
 * holds undefined, so it is a JsonObject.
 */
function asJsonObject(obj: KubeObject | JsonObject): JsonObject {
  return obj as JsonObject;
}

/** What a matched subtree becomes: a value in its place, or undefined to drop it. */
type Replace = (value: JsonValue) => JsonValue | undefined;

const drop: Replace = () => undefined;

function rewriteValue(
  value: JsonValue,
  cursor: MatchCursor,
  matcher: PathMatcher,
  replace: Replace,
): JsonValue {
  // Nothing below can match, or nothing to descend into: share the subtree.
  if (cursor.length === 0 || typeof value !== 'object' || value === null) return value;
  return Array.isArray(value)
    ? rewriteArray(value, cursor, matcher, replace)
    : rewriteObject(value, cursor, matcher, replace);
}

function rewriteObject(
  obj: JsonObject,
  cursor: MatchCursor,
  matcher: PathMatcher,
  replace: Replace,
): JsonObject {
  const keys = Object.keys(obj);
  // Created lazily, at the first key whose value differs from the input's.
  let copy: JsonObject | undefined;
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const value = obj[key]!;
    const below = matcher.step(cursor, key);
    const kept = below === 'matched' ? replace(value) : rewriteValue(value, below, matcher, replace);
    if (kept !== value && copy === undefined) copy = copyOfFirstKeys(obj, keys, index);
    if (copy !== undefined && kept !== undefined) setProperty(copy, key, kept);
  }
  return copy ?? obj;
}

function rewriteArray(
  items: JsonValue[],
  cursor: MatchCursor,
  matcher: PathMatcher,
  replace: Replace,
): JsonValue[] {
  let copy: JsonValue[] | undefined;
  for (let index = 0; index < items.length; index++) {
    const item = items[index]!;
    const below = matcher.step(cursor, String(index));
    const kept = below === 'matched' ? replace(item) : rewriteValue(item, below, matcher, replace);
    if (kept !== item && copy === undefined) copy = items.slice(0, index);
    if (copy !== undefined && kept !== undefined) copy.push(kept);
  }
  return copy ?? items;
}

function copyOfFirstKeys(obj: JsonObject, keys: readonly string[], count: number): JsonObject {
  const copy: JsonObject = {};
  for (let index = 0; index < count; index++) {
    const key = keys[index]!;
    setProperty(copy, key, obj[key]!);
  }
  return copy;
}
