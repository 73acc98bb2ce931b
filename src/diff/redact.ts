// Secrets never leak (PRODUCT.md): their values are replaced by a short hash before an object is
// stored or diffed, so every output and every sink only ever sees the hash.

import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../kube/types.ts';
import { copyObject, getProperty, isJsonObject, setProperty } from './json.ts';

/** `kubectl apply` copies the whole manifest, Secret values included, into this annotation. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

const REDACTED_FIELDS = ['data', 'stringData'] as const;

/**
 * '<redacted sha256:1a2b3c4d>': the same value always gives the same text, so "it changed" stays
 * visible as a different hash, while 8 hex digits say nothing useful about the value itself.
 */
export function redactedValue(value: JsonValue): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const digest = createHash('sha256').update(text).digest('hex');
  return `<redacted sha256:${digest.slice(0, 8)}>`;
}

/**
 * Only core v1 Secrets are redacted. The check needs kind and apiVersion on the object itself;
 * items of a list response lack them, so whoever lists must set them before calling this.
 */
export function isSecret(obj: JsonObject): boolean {
  return obj.kind === 'Secret' && obj.apiVersion === 'v1';
}

/**
 * For a Secret: a copy whose data and stringData values, and last-applied annotation, are redacted
 * (keys stay, so a user sees which key changed). Only the objects on those paths are copied; the
 * rest is shared with the input, which is never mutated. Anything else is returned as is.
 */
export function redactSecret(obj: JsonObject): JsonObject {
  if (!isSecret(obj)) return obj;
  const copy = copyObject(obj);
  for (const field of REDACTED_FIELDS) {
    const values = getProperty(obj, field);
    if (isJsonObject(values)) copy[field] = redactValues(values);
    // The API server never serves anything but a map here; if it ever did, hide it whole.
    else if (values !== undefined && values !== null) copy[field] = redactedValue(values);
  }
  const metadata = getProperty(obj, 'metadata');
  if (isJsonObject(metadata)) {
    const annotations = getProperty(metadata, 'annotations');
    if (isJsonObject(annotations) && Object.hasOwn(annotations, LAST_APPLIED_ANNOTATION)) {
      const redactedAnnotations = copyObject(annotations);
      redactedAnnotations[LAST_APPLIED_ANNOTATION] = redactedValue(annotations[LAST_APPLIED_ANNOTATION]!);
      const redactedMetadata = copyObject(metadata);
      redactedMetadata.annotations = redactedAnnotations;
      copy.metadata = redactedMetadata;
    }
  }
  return copy;
}

function redactValues(values: JsonObject): JsonObject {
  const redacted: JsonObject = {};
  for (const key of Object.keys(values)) setProperty(redacted, key, redactedValue(values[key]!));
  return redacted;
}
