// Secrets never leak (PRODUCT.md): their values are replaced by a short hash before an object is
// stored or diffed, so every output and every sink only ever sees the hash. Whether an object is a
// Secret is decided by the resource type being watched, never by the object's own apiVersion/kind:
// a list item, a relist, a catch-up or a future API version cannot take another path.

import { createHash, createHmac } from 'node:crypto';
import type { JsonObject, JsonValue, ResourceType } from '../kube/types.ts';
import { isJsonObject } from '../kube/types.ts';
import { copyObject, getProperty, setProperty } from './json.ts';

/**
 * The only Secret annotations shown as they are; every other annotation value of a Secret is hashed,
 * because tools store whole copies of the Secret there (kapp's `kapp.k14s.io/original`, kubectl's
 * last-applied configuration, backup and replication tools). Each entry names another Kubernetes
 * object that anyone allowed to list that object can read anyway, and tells a reader which Secret
 * belongs to what; none holds free text or content.
 */
export const SECRET_ANNOTATIONS_SHOWN: readonly string[] = [
  // The ServiceAccount a token Secret belongs to: set by the API server, a name and a uid.
  'kubernetes.io/service-account.name',
  'kubernetes.io/service-account.uid',
  // The Helm release that owns the Secret: a release name and a namespace.
  'meta.helm.sh/release-name',
  'meta.helm.sh/release-namespace',
  // The cert-manager Certificate and issuer behind a TLS Secret: object names and an API kind.
  'cert-manager.io/certificate-name',
  'cert-manager.io/issuer-name',
  'cert-manager.io/issuer-kind',
  'cert-manager.io/issuer-group',
];
const SHOWN = new Set(SECRET_ANNOTATIONS_SHOWN);

/** Shorter keys are refused: a guessable key would make the keyed hash as weak as the plain one. */
export const MIN_REDACTION_KEY_LENGTH = 16;

const DIGITS = 8;

/**
 * Turns a value into its marker. Without a key, '<redacted sha256:1a2b3c4d>': stable everywhere, but
 * anyone who sees it can confirm a guess of a weak value by hashing the guess. With a key
 * (KUBEDIFF_REDACTION_KEY), '<redacted hmac:1a2b3c4d>', an HMAC-SHA256 that only the key's holder
 * can compute. Either way the same value always gives the same marker, so "it changed" stays
 * visible, while 8 hex digits say nothing useful about the value itself.
 */
export class Redactor {
  readonly kind: 'sha256' | 'hmac';
  readonly #key: string | undefined;

  /** `key`: at least MIN_REDACTION_KEY_LENGTH characters (checked where it is read, src/config/redaction.ts). */
  constructor(key?: string) {
    this.#key = key;
    this.kind = key === undefined ? 'sha256' : 'hmac';
  }

  marker(value: JsonValue): string {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    const hash = this.#key === undefined ? createHash('sha256') : createHmac('sha256', this.#key);
    return `<redacted ${this.kind}:${hash.update(text).digest('hex').slice(0, DIGITS)}>`;
  }

  /**
   * Names the hashing in use without revealing the key (an HMAC of a fixed text), so that a state file
   * written with another key is recognised: its markers could not be compared with today's.
   */
  get id(): string {
    if (this.#key === undefined) return this.kind;
    return `${this.kind}:${createHmac('sha256', this.#key).update('kubediff redaction key id').digest('hex').slice(0, 16)}`;
  }
}

/** The core group's `secrets`, whatever its version. */
export function isSecretType(type: Pick<ResourceType, 'group' | 'resource'>): boolean {
  return type.group === '' && type.resource === 'secrets';
}

const REDACTED_FIELDS = ['data', 'stringData'] as const;

/**
 * A copy of a Secret whose data and stringData values, and annotation values (but those of
 * SECRET_ANNOTATIONS_SHOWN), are markers. Keys stay, so a user sees which key changed. Only the
 * objects on those paths are copied; the rest is shared with the input, which is never mutated.
 */
export function redactSecret(obj: JsonObject, redactor: Redactor): JsonObject {
  const copy = copyObject(obj);
  for (const field of REDACTED_FIELDS) {
    const values = getProperty(obj, field);
    if (isJsonObject(values)) copy[field] = redactValues(values, redactor, () => true);
    // The API server never serves anything but a map here; if it ever did, hide it whole.
    else if (values !== undefined && values !== null) copy[field] = redactor.marker(values);
  }
  const metadata = getProperty(obj, 'metadata');
  const annotations = isJsonObject(metadata) ? getProperty(metadata, 'annotations') : undefined;
  if (isJsonObject(metadata) && annotations !== undefined && annotations !== null) {
    const redactedMetadata = copyObject(metadata);
    redactedMetadata.annotations = isJsonObject(annotations)
      ? redactValues(annotations, redactor, (key) => !SHOWN.has(key))
      : redactor.marker(annotations);
    copy.metadata = redactedMetadata;
  }
  return copy;
}

function redactValues(values: JsonObject, redactor: Redactor, hidden: (key: string) => boolean): JsonObject {
  const redacted: JsonObject = {};
  for (const key of Object.keys(values)) {
    const value = values[key]!;
    setProperty(redacted, key, hidden(key) ? redactor.marker(value) : value);
  }
  return redacted;
}
