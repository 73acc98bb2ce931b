// A digest of an object as the store keeps it (normalized: ignored paths gone, Secret values and
// `redact:` paths already hashed), to tell whether an admission review's object is the one the watch then
// saw (src/who/admission/admission-match.ts). The resourceVersion is left out: a review's object has its old one
// (or none), the stored object its new one; so are apiVersion and kind (a LIST's items lack them). Keys are
// sorted, so the order in which a server wrote them does not matter. The digest holds nothing the
// events do not show already: what it covers is normalized, so no Secret value is in it. The canonical
// text is hashed as it is written, a chunk at a time: a large object's digest never holds its whole text.

import { createHash, type Hash } from 'node:crypto';
import type { JsonObject, JsonValue } from '../../kube/types.ts';

/** 128 bits of SHA-256, base64url: enough that two different objects never share one by chance. */
export function objectDigest(object: JsonObject): string {
  const parts = new HashedText(createHash('sha256'));
  canonical(withoutVersion(object), parts);
  return parts.end().digest('base64url').slice(0, 22);
}

/** Text hashed in chunks as it is written (the same hash as of the whole text at once). */
class HashedText {
  static readonly CHUNK = 64 * 1024;
  readonly #hash: Hash;
  #chunk = '';

  constructor(hash: Hash) {
    this.#hash = hash;
  }

  push(text: string): void {
    this.#chunk += text;
    if (this.#chunk.length >= HashedText.CHUNK) {
      this.#hash.update(this.#chunk);
      this.#chunk = '';
    }
  }

  end(): Hash {
    return this.#hash.update(this.#chunk);
  }
}

function withoutVersion(object: JsonObject): JsonObject {
  const { apiVersion: _apiVersion, kind: _kind, metadata, ...rest } = object;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) return rest;
  const { resourceVersion: _resourceVersion, ...meta } = metadata;
  return { ...rest, metadata: meta };
}

/** JSON with object keys sorted. */
function canonical(value: JsonValue, parts: HashedText): void {
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
