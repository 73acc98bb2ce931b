// `redact:` rules hold wherever a tool copies the object into its own annotations (kubectl apply's
// last-applied-configuration, kapp's original, …; docs/security.md, "Redaction"): an annotation whose
// value is a JSON object has the type's rules applied inside it (rewritten only when something was
// redacted, else kept byte for byte); a known copy (COPY_ANNOTATIONS) that is not a JSON object is hashed
// whole; a copy in another form under another name needs a rule naming it. Secrets never come here: their
// annotations are hashed whole (redact.ts).

import type { JsonObject, JsonValue } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { copyObject, getProperty, setProperty } from './json.ts';
import type { Redactor } from './redact.ts';

/** Annotations that hold a whole copy of the object as JSON: hashed whole when they cannot be read as one. */
export const COPY_ANNOTATIONS: readonly string[] = [
  'kubectl.kubernetes.io/last-applied-configuration',
  'kapp.k14s.io/original',
];
const COPIES = new Set(COPY_ANNOTATIONS);

/** A JSON object's text begins with '{' (after JSON's whitespace): anything else is not parsed at all. */
const LOOKS_LIKE_OBJECT = /^[ \t\r\n]*\{/;

/**
 * `obj` with every copy in its annotations redacted by `redactCopy` (the type's rules, applied to a parsed
 * copy; it must return its input when nothing in it is redacted). Returns `obj` itself when no annotation
 * changed; the input is never mutated.
 */
export function redactAnnotationCopies(
  obj: JsonObject,
  redactCopy: (copy: JsonObject) => JsonObject,
  redactor: Redactor,
): JsonObject {
  const metadata = getProperty(obj, 'metadata');
  if (!isJsonObject(metadata)) return obj;
  const annotations = getProperty(metadata, 'annotations');
  if (!isJsonObject(annotations)) return obj;
  let redacted: JsonObject | undefined;
  for (const key of Object.keys(annotations)) {
    const value = annotations[key]!;
    const kept = redactCopyIn(value, COPIES.has(key), redactCopy, redactor);
    if (kept === value) continue;
    redacted ??= copyObject(annotations);
    setProperty(redacted, key, kept);
  }
  if (redacted === undefined) return obj;
  const copy = copyObject(obj);
  const redactedMetadata = copyObject(metadata);
  redactedMetadata.annotations = redacted;
  copy.metadata = redactedMetadata;
  return copy;
}

function redactCopyIn(
  value: JsonValue,
  knownCopy: boolean,
  redactCopy: (copy: JsonObject) => JsonObject,
  redactor: Redactor,
): JsonValue {
  if (typeof value !== 'string') return knownCopy ? redactor.marker(value) : value;
  if (!LOOKS_LIKE_OBJECT.test(value)) return knownCopy ? redactor.marker(value) : value;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return knownCopy ? redactor.marker(value) : value;
  }
  if (!isJsonObject(parsed)) return knownCopy ? redactor.marker(value) : value;
  const result = redactCopy(parsed);
  if (result === parsed) return value;
  // kubectl ends its copy with a newline: keep the text's own ending, so only the redacted values differ.
  return `${JSON.stringify(result)}${/\n$/.test(value) ? '\n' : ''}`;
}
