// A seeded corpus of objects that hold secrets, and random edits of them, for the leak tests: Secrets (data,
// stringData, last-applied and kapp annotations, other annotations), ConfigMaps and a custom resource whose
// credentials `redact:` rules name, with copies of themselves in their annotations (kubectl's last-applied,
// kapp's original, a backup tool's copy under a name of its own, a truncated copy that cannot be read). Every secret value comes from secretValue (leak-check.ts), so a leak of
// any of them is found by the canary; every value meant to stay visible does not hold the canary, and some
// of them are checked to appear, so that the outputs are known to carry the objects' contents at all.
//
// With `apiValid`, keys and sizes are what the API server accepts (the end-to-end test creates them); without
// it, keys also hold '/', '~', unicode, '' and '__proto__' (the in-process corpus).
import type { JsonObject, JsonValue, ResourceType } from '../../src/kube/types.ts';
import { secretValue } from './leak-check.ts';
import { setKey } from './random-json.ts';

/** The custom resource of the corpus: credentials under spec, named by `redact:` rules. */
export const VAULT_TYPE: ResourceType = {
  group: 'leak.kubediff.io',
  version: 'v1',
  resource: 'vaults',
  kind: 'Vault',
  namespaced: true,
  verbs: ['list', 'watch'],
  shortNames: ['vlt'],
  singularName: 'vault',
  categories: [],
};

/**
 * The corpus's `redact:` rules, naming types the ways people do (short name, plural, kind, qualified name,
 * group wildcard), with a wildcard segment and a key that holds '/' and '~'.
 */
export const CORPUS_REDACT_RULES: readonly { path: string; resources: string[] }[] = [
  { path: '/data/password', resources: ['cm'] },
  { path: '/data/api.token', resources: ['configmaps'] },
  { path: '/binaryData', resources: ['ConfigMap'] },
  { path: '/spec/credentials', resources: ['vlt'] },
  { path: '/spec/backends/*/secret', resources: ['vaults.leak.kubediff.io'] },
  { path: '/spec/a~1b~0c', resources: ['*.kubediff.io'] },
];

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Annotations of a Secret that are shown as they are (src/diff/redact.ts): the corpus checks they are. */
const SHOWN_ANNOTATION = 'meta.helm.sh/release-name';

const API_KEYS = ['password', 'api.token', 'tls.key', 'ssh-privatekey', '.dockerconfigjson', 'a_b-c.d', 'X'];
const ODD_KEYS = ['a/b', 't~z', '~1/~0', 'ключ', '🔑', '__proto__', '', 'with space'];
const API_ANNOTATIONS = ['example.com/token', 'backup.example.io/copy', 'note', 'a.b/c_d'];
const ODD_ANNOTATIONS = ['x~y/z', 'ünï/cødé'];
const CREDENTIAL_KEYS = ['user', 'pass', 'a/b', 'x~y', 'clé', '🔒', 'nested.key'];

export type CorpusKind = 'Secret' | 'ConfigMap' | 'Vault';

export interface CorpusOptions {
  seed: number;
  /** Keys and sizes the API server accepts. */
  apiValid: boolean;
  /** One secret value in this many is huge (200 KiB); 0 for none. */
  hugeEvery?: number;
}

export class SecretCorpus {
  readonly random: () => number;
  readonly #apiValid: boolean;
  readonly #hugeEvery: number;
  #values = 0;
  #visible = 0;

  constructor(options: CorpusOptions, random: () => number) {
    this.random = random;
    this.#apiValid = options.apiValid;
    this.#hugeEvery = options.hugeEvery ?? 0;
  }

  /** How many secret values were made. */
  get secretCount(): number {
    return this.#values;
  }

  /** A new object of `kind` (body only: name and namespace are the caller's). */
  create(kind: CorpusKind): JsonObject {
    switch (kind) {
      case 'Secret':
        return this.#secret();
      case 'ConfigMap':
        return this.#configMap();
      case 'Vault':
        return this.#vault();
    }
  }

  /** A copy of `object` with one to three random edits. */
  edit(kind: CorpusKind, object: JsonObject): JsonObject {
    const copy = structuredClone(object);
    const edits = 1 + this.int(3);
    for (let n = 0; n < edits; n++) {
      if (kind === 'Secret') this.#editSecret(copy);
      else if (kind === 'ConfigMap') this.#editConfigMap(copy);
      else this.#editVault(copy);
    }
    return copy;
  }

  /** A value that is not secret (it has no canary): shown as it is. */
  visible(): string {
    return `visible-${++this.#visible}-${Math.floor(this.random() * 1e9).toString(36)}`;
  }

  /** A new secret value (see leak-check.ts), now and then a huge one. */
  secret(): string {
    this.#values++;
    const huge = this.#hugeEvery > 0 && this.int(this.#hugeEvery) === 0;
    return secretValue(this.random, huge ? 200 * 1024 : 16 + this.int(120));
  }

  int(limit: number): number {
    return Math.floor(this.random() * limit);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  #keys(): readonly string[] {
    return this.#apiValid ? API_KEYS : [...API_KEYS, ...ODD_KEYS];
  }

  #secret(): JsonObject {
    const data: JsonObject = {};
    const count = 1 + this.int(4);
    for (let n = 0; n < count; n++) setKey(data, this.pick(this.#keys()), base64(this.secret()));
    const secret: JsonObject = {
      metadata: {
        labels: { app: this.visible() },
        annotations: { [SHOWN_ANNOTATION]: this.visible() },
      },
      type: 'Opaque',
      data,
    };
    this.#copyIntoAnnotations(secret);
    if (!this.#apiValid && this.int(3) === 0) secret.stringData = { token: this.secret() };
    return secret;
  }

  #editSecret(secret: JsonObject): void {
    const data = secret.data as JsonObject;
    const annotations = (secret.metadata as JsonObject).annotations as JsonObject;
    switch (this.int(7)) {
      case 0: // a new value, or a new key
        setKey(data, this.pick(this.#keys()), base64(this.secret()));
        break;
      case 1: {
        const keys = Object.keys(data);
        if (keys.length > 1) delete data[this.pick(keys)];
        else setKey(data, this.pick(this.#keys()), base64(this.secret()));
        break;
      }
      case 2: // written as stringData: the API server turns it into data
        secret.stringData = { [this.pick(API_KEYS)]: this.secret() };
        break;
      case 3:
        this.#copyIntoAnnotations(secret);
        break;
      case 4:
        setKey(annotations, this.pick(this.#annotationKeys()), this.secret());
        break;
      case 5:
        annotations[SHOWN_ANNOTATION] = this.visible();
        break;
      default:
        ((secret.metadata as JsonObject).labels as JsonObject).app = this.visible();
    }
  }

  #annotationKeys(): readonly string[] {
    return this.#apiValid ? API_ANNOTATIONS : [...API_ANNOTATIONS, ...ODD_ANNOTATIONS];
  }

  /** kubectl apply and kapp keep whole copies of the Secret, values included, in annotations. */
  #copyIntoAnnotations(secret: JsonObject): void {
    const annotations = (secret.metadata as JsonObject).annotations as JsonObject;
    const copy = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', data: secret.data });
    // The API server takes at most 256 KiB of annotations.
    if (this.#apiValid && copy.length > 100_000) return;
    annotations['kubectl.kubernetes.io/last-applied-configuration'] = copy;
    if (this.int(2) === 0) annotations['kapp.k14s.io/original'] = copy;
  }

  #configMap(): JsonObject {
    const configMap: JsonObject = {
      metadata: { labels: { app: this.visible() }, annotations: {} },
      data: { color: this.visible(), password: this.secret(), 'api.token': this.secret() },
    };
    if (this.int(2) === 0) configMap.binaryData = { blob: base64(this.secret()) };
    this.#copyContentIntoAnnotations('ConfigMap', configMap);
    return configMap;
  }

  #editConfigMap(configMap: JsonObject): void {
    const data = configMap.data as JsonObject;
    switch (this.int(6)) {
      case 5:
        this.#copyContentIntoAnnotations('ConfigMap', configMap);
        break;
      case 0:
        data.password = this.secret();
        break;
      case 1:
        data['api.token'] = this.secret();
        break;
      case 2:
        configMap.binaryData = { blob: base64(this.secret()), [`b${this.int(3)}`]: base64(this.secret()) };
        break;
      case 3:
        data.mode = this.visible();
        break;
      default:
        data.color = this.visible();
    }
  }

  #vault(): JsonObject {
    const vault: JsonObject = {
      metadata: { labels: { app: this.visible() }, annotations: {} },
      spec: {
        visible: this.visible(),
        credentials: this.#credentials(2),
        backends: [{ name: 'primary', url: this.visible(), secret: this.secret() }],
        'a/b~c': { key: this.secret() },
      },
    };
    this.#copyContentIntoAnnotations('Vault', vault);
    return vault;
  }

  #editVault(vault: JsonObject): void {
    const spec = vault.spec as JsonObject;
    const backends = spec.backends as JsonObject[];
    switch (this.int(6)) {
      case 5:
        this.#copyContentIntoAnnotations('Vault', vault);
        break;
      case 0:
        spec.credentials = this.#credentials(2);
        break;
      case 1:
        this.pick(backends).secret = this.secret();
        break;
      case 2:
        backends.push({ name: `b${backends.length}`, url: this.visible(), secret: this.secret() });
        break;
      case 3:
        spec['a/b~c'] = { key: this.secret(), [this.pick(CREDENTIAL_KEYS)]: this.secret() };
        break;
      default:
        spec.visible = this.visible();
    }
  }

  /**
   * What tools keep of a ConfigMap or a custom resource in its annotations, values included: kubectl's
   * last-applied copy (with its newline), kapp's original, a backup tool's copy (holding the last-applied
   * copy of its time), and now and then a truncated copy that cannot be read.
   */
  #copyContentIntoAnnotations(kind: 'ConfigMap' | 'Vault', object: JsonObject): void {
    const annotations = (object.metadata as JsonObject).annotations as JsonObject;
    const { metadata: _metadata, ...content } = object;
    const apiVersion = kind === 'Vault' ? 'leak.kubediff.io/v1' : 'v1';
    const copy = JSON.stringify({ apiVersion, kind, metadata: { name: 'copy' }, ...content });
    // The API server takes at most 256 KiB of annotations.
    if (this.#apiValid && copy.length > 60_000) return;
    annotations[LAST_APPLIED] = `${copy}\n`;
    const dice = this.int(4);
    if (dice === 0) annotations['kapp.k14s.io/original'] = copy;
    if (dice === 1)
      annotations['backup.example.io/object'] = JSON.stringify({
        ...JSON.parse(copy),
        metadata: { name: 'copy', annotations: { [LAST_APPLIED]: annotations[LAST_APPLIED]! } },
      });
    if (dice === 2) annotations['kapp.k14s.io/original'] = copy.slice(0, -1 - this.int(20));
  }

  /** A subtree of secrets under keys with '/', '~' and unicode: strings, lists and maps. */
  #credentials(depth: number): JsonObject {
    const credentials: JsonObject = {};
    const count = 1 + this.int(3);
    for (let n = 0; n < count; n++) {
      const kind = depth > 0 ? this.int(3) : 0;
      const value: JsonValue =
        kind === 0
          ? this.secret()
          : kind === 1
            ? [this.secret(), this.secret()]
            : this.#credentials(depth - 1);
      setKey(credentials, this.pick(CREDENTIAL_KEYS), value);
    }
    return credentials;
  }
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}
