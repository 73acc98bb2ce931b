// A digest of an object as the store keeps it (normalized: ignored paths gone, Secret values and
// `redact:` paths already hashed), to tell whether an admission review's object is the one the watch then
// saw (src/events/admission-match.ts). The resourceVersion is left out: a review's object has its old one
// (or none), the stored object its new one; so are apiVersion and kind (a LIST's items lack them). Keys are
// sorted, so the order in which a server wrote them does not matter. The digest holds nothing the
// events do not show already: what it covers is normalized, so no Secret value is in it.

import { createHash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../kube/types.ts';

/** 128 bits of SHA-256, base64url: enough that two different objects never share one by chance. */
export function objectDigest(object: JsonObject): string {
  const parts: string[] = [];
  canonical(withoutVersion(object), parts);
  return createHash('sha256').update(parts.join('')).digest('base64url').slice(0, 22);
}

function withoutVersion(object: JsonObject): JsonObject {
  const { apiVersion: _apiVersion, kind: _kind, metadata, ...rest } = object;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return rest;
  const { resourceVersion: _resourceVersion, ...meta } = metadata;
  return { ...rest, metadata: meta };
}

/** JSON with object keys sorted. */
function canonical(value: JsonValue, parts: string[]): void {
  if (value === null || typeof value !== 'object') {
    parts.push(JSON.stringify(value));
  } else if (Array.isArray(value)) {
    parts.push('[');
    value.forEach((item, index) => {
      if (index > 0) parts.push(',');
      canonical(item, parts);
    });
    parts.push(']');
  } else {
    parts.push('{');
    Object.keys(value)
      .sort()
      .forEach((key, index) => {
        parts.push(index > 0 ? `,${JSON.stringify(key)}:` : `${JSON.stringify(key)}:`);
        canonical(value[key] as JsonValue, parts);
      });
    parts.push('}');
  }
}
