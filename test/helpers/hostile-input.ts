// Seeded hostile input for the standing harness (test/integration/hostile-inputs.test.ts): documents that
// are almost right (a valid template with random parts replaced, removed, renamed, retyped or nested
// too deep), text that is not quite a document (truncated, with a stray byte, a YAML alias bomb), URL
// paths and query strings a browser would never send, admission reviews a forger would post. Every
// generator takes the same seeded random, so a failure names its seed and input index and is reproduced
// exactly.
import { stringify } from 'yaml';
import type { JsonObject, JsonValue } from '../../src/kube/types.ts';
import { hostileText } from './hostile-text.ts';

export type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (random: Random, limit: number): number => Math.floor(random() * limit);

/** A value of any JSON type, hostile where it is text, sometimes deeply nested or very large. */
export function hostileValue(random: Random, depth = 0): JsonValue {
  const dice = int(random, depth > 3 ? 8 : 12);
  switch (dice) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return pick(random, [0, -1, 1e308, -1e-308, 2 ** 53 + 1, 0.5, Number.MAX_SAFE_INTEGER]);
    case 3:
      return '';
    case 4:
      return 'x'.repeat(int(random, 4) === 0 ? 20_000 : 300);
    case 5:
    case 6:
    case 7:
      return hostileText(random);
    case 8:
      return Array.from({ length: int(random, 4) }, () => hostileValue(random, depth + 1));
    case 9: {
      // Nested far deeper than any real document.
      let value: JsonValue = hostileText(random, 1);
      for (let n = 0; n < 50 + int(random, 150); n++) value = random() < 0.5 ? [value] : { a: value };
      return value;
    }
    default: {
      const object: JsonObject = {};
      for (let n = int(random, 4); n > 0; n--) object[hostileKey(random)] = hostileValue(random, depth + 1);
      return object;
    }
  }
}

/** A key: hostile text, or one that tries the prototype. */
export function hostileKey(random: Random): string {
  return pick(random, [
    '__proto__',
    'constructor',
    'prototype',
    '',
    hostileText(random, 2),
    hostileText(random, 1),
  ]);
}

/**
 * `template` with one to four random edits: a value replaced by a hostile one or retyped, a key removed,
 * renamed or added, a list emptied; the template is not changed.
 */
export function mutated(random: Random, template: JsonObject): JsonObject {
  const copy = structuredClone(template) as JsonObject;
  for (let edits = 1 + int(random, 4); edits > 0; edits--) {
    // Walk down to a random container.
    let at: JsonObject | JsonValue[] = copy;
    for (let depth = int(random, 4); depth > 0; depth--) {
      const children = Object.values(at).filter((value) => typeof value === 'object' && value !== null) as (
        | JsonObject
        | JsonValue[]
      )[];
      if (children.length === 0) break;
      at = pick(random, children);
    }
    const keys = Object.keys(at);
    const key = keys.length > 0 ? pick(random, keys) : '0';
    const target = at as Record<string, JsonValue>;
    switch (int(random, 5)) {
      case 0:
        delete target[key];
        break;
      case 1:
        Object.defineProperty(target, hostileKey(random), {
          value: hostileValue(random),
          enumerable: true,
          writable: true,
          configurable: true,
        });
        break;
      case 2: {
        const value = target[key];
        delete target[key];
        target[hostileText(random, 1)] = value ?? null;
        break;
      }
      default:
        target[key] = hostileValue(random);
    }
  }
  return copy;
}

/** Text mutations of a document: truncated, a byte flipped, a BOM, tabs, an alias bomb. */
export function mangled(random: Random, text: string): string {
  switch (int(random, 7)) {
    case 0:
      return text.slice(0, int(random, text.length + 1));
    case 1: {
      const at = int(random, text.length + 1);
      return `${text.slice(0, at)}${pick(random, ['\u0000', '\t', '"', "'", ':', '-', '{', '[', '\ufeff', '\ud800', '&a', '*a', '!!binary', '%YAML 1.1\n'])}${text.slice(at)}`;
    }
    case 2:
      return `\ufeff${text}`;
    case 3:
      // Billion laughs: aliases that expand to gigabytes if followed naively.
      return `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n${text}`;
    case 4:
      return text.replaceAll('  ', '\t');
    case 5:
      return `${text}\n---\n${text}`;
    default:
      return `${'['.repeat(500)}${text}`;
  }
}

/** A document as text: YAML or JSON of a mutated template, now and then mangled as text. */
export function hostileDocument(random: Random, template: JsonObject): string {
  const document = mutated(random, template);
  let text: string;
  try {
    text = random() < 0.5 ? JSON.stringify(document) : stringify(document, { aliasDuplicateObjects: false });
  } catch {
    text = JSON.stringify(document);
  }
  return random() < 0.3 ? mangled(random, text) : text;
}

/** Percent-encodes some characters and leaves others raw, as a hostile client would. */
function encodedLoosely(random: Random, text: string): string {
  let out = '';
  for (const character of text) {
    if (/[A-Za-z0-9._~-]/.test(character) || random() < 0.1) out += character;
    else
      out += encodeURIComponent(
        character.length === 1 && /[\ud800-\udfff]/.test(character) ? '?' : character,
      );
  }
  return out;
}

/** A request target for the UI server: a known route or not, with hostile parameters. */
export function hostileUiTarget(random: Random, routes: readonly string[]): string {
  const path =
    random() < 0.85
      ? pick(random, routes)
      : pick(random, [
          `/${encodedLoosely(random, hostileText(random, 2))}`,
          '/../../../../etc/passwd',
          '/assets/../server.ts',
          '/assets/%2e%2e%2fserver.ts',
          '//evil.example/',
          '/api/v1/',
          `/api/v1/${'a'.repeat(int(random, 5_000))}`,
          '/%00',
        ]);
  const names = [
    'from',
    'to',
    'limit',
    'before',
    'after',
    'kind',
    'namespace',
    'name',
    'cluster',
    'manager',
    'user',
    'path',
    'type',
    'rows',
    'a',
    'b',
    'seq',
    'row',
    'bucket',
  ];
  const params: string[] = [];
  for (let n = int(random, 6); n > 0; n--) {
    const name = random() < 0.8 ? pick(random, names) : hostileText(random, 1);
    const value = pick(random, [
      hostileText(random, 2),
      String(int(random, 2) === 0 ? -int(random, 1e9) : int(random, 1e12)),
      '1e309',
      'NaN',
      '0x10',
      '2026-11-22T10:31:07Z',
      '9999-99-99T99:99:99Z',
      '',
      'x'.repeat(int(random, 3_000)),
    ]);
    params.push(`${encodedLoosely(random, name)}=${encodedLoosely(random, value)}`);
  }
  return params.length > 0 ? `${path}?${params.join(pick(random, ['&', '&&', ';', '&=&']))}` : path;
}

/** What a forger who can read an object knows before the next write of it. */
export interface ForgeryTarget {
  resource: { group: string; version: string; resource: string };
  kind: { group: string; version: string; kind: string };
  /** The object as the API server serves it now. */
  current: JsonObject;
  /** The object as the next write will make it, as far as the forger can tell. */
  predicted: JsonObject;
}

/** Where forgedReview() puts an object nested far deeper than anything can follow (JSON.stringify cannot). */
const DEEP = '<nested too deep>';
const DEPTH = 100_000;

/**
 * A forged AdmissionReview of the next write of `target`, naming `user`, as a forger who can read the
 * object and reach the webhook posts it: any operation, subresource and kind; the object as predicted, as
 * it is now, mutated, nested far too deep, bare (its uid and resourceVersion alone) or absent, and the
 * old object likewise; a scale with any replicas. The body, as text.
 */
export function forgedReview(random: Random, target: ForgeryTarget, user: JsonObject): string {
  const metadata = (target.current.metadata ?? {}) as JsonObject;
  const bare: JsonObject = {
    metadata: {
      name: metadata.name ?? null,
      namespace: metadata.namespace ?? null,
      uid: metadata.uid ?? null,
      resourceVersion: metadata.resourceVersion ?? null,
    },
  };
  const subResource = pick(random, [
    undefined,
    undefined,
    undefined,
    'scale',
    'status',
    hostileText(random, 1),
  ]);
  const scale = subResource === 'scale' && random() < 0.8;
  const kind = scale
    ? { group: 'autoscaling', version: 'v1', kind: 'Scale' }
    : pick(random, [
        target.kind,
        target.kind,
        target.kind,
        target.kind,
        { ...target.kind, version: 'v2' },
        { group: hostileText(random, 1), version: 'v1', kind: hostileText(random, 1) },
      ]);
  const object: JsonValue = scale
    ? { apiVersion: 'autoscaling/v1', kind: 'Scale', ...bare, spec: { replicas: int(random, 10) } }
    : pick(random, [
        target.predicted,
        target.predicted,
        target.predicted,
        target.current,
        mutated(random, target.predicted),
        mutated(random, target.predicted),
        bare,
        { ...bare, spec: DEEP },
        null,
        {},
      ]);
  const oldObject: JsonValue = pick(random, [
    target.current,
    target.current,
    target.current,
    bare,
    bare,
    mutated(random, target.current),
    { ...bare, data: DEEP },
    null,
  ]);
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `forged-${int(random, 1e15)}`,
      kind,
      resource: target.resource,
      ...(subResource === undefined ? {} : { subResource }),
      namespace: metadata.namespace ?? null,
      name: metadata.name ?? null,
      operation: pick(random, [
        'UPDATE',
        'UPDATE',
        'UPDATE',
        'DELETE',
        'DELETE',
        'CREATE',
        hostileText(random, 1),
      ]),
      userInfo: user,
      object,
      oldObject,
      dryRun: false,
    },
  });
  return body.replaceAll(JSON.stringify(DEEP), `${'['.repeat(DEPTH)}${']'.repeat(DEPTH)}`);
}
