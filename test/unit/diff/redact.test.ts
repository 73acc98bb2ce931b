import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { Redactor, redactSecret, SECRET_ANNOTATIONS_SHOWN } from '../../../src/diff/redact.ts';
import type { JsonObject } from '../../../src/kube/types.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const PASSWORD = 'c3VwZXItc2VjcmV0LXBhc3N3b3Jk'; // base64 of super-secret-password
const TOKEN = 'plain-token-value';
const KEY = 'k'.repeat(32);
const plain = new Redactor();

function hashOf(value: string): string {
  return `<redacted sha256:${createHash('sha256').update(value).digest('hex').slice(0, 8)}>`;
}

function secret(annotations: Record<string, string> = {}): JsonObject {
  const lastApplied = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', data: { password: PASSWORD } });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: 'db',
      namespace: 'shop',
      annotations: { [LAST_APPLIED]: lastApplied, team: 'data', ...annotations },
    },
    type: 'Opaque',
    data: { password: PASSWORD, 'tls.crt': 'Y2VydA==' },
    stringData: { token: TOKEN },
  };
}

describe('redactSecret', () => {
  it('replaces data, stringData and every annotation value by a short hash, keeping the keys', () => {
    const input = secret();
    const lastApplied = (input.metadata as { annotations: Record<string, string> }).annotations[
      LAST_APPLIED
    ]!;
    assert.deepEqual(redactSecret(input, plain), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'db',
        namespace: 'shop',
        annotations: { [LAST_APPLIED]: hashOf(lastApplied), team: hashOf('data') },
      },
      type: 'Opaque',
      data: { password: hashOf(PASSWORD), 'tls.crt': hashOf('Y2VydA==') },
      stringData: { token: hashOf(TOKEN) },
    });
  });

  it('hashes copies other tools keep in annotations (kapp), and shows only the documented harmless ones', () => {
    const kappOriginal = JSON.stringify({ kind: 'Secret', data: { password: PASSWORD } });
    const shown = Object.fromEntries(SECRET_ANNOTATIONS_SHOWN.map((key) => [key, `value-of-${key}`]));
    const redacted = redactSecret(secret({ 'kapp.k14s.io/original': kappOriginal, ...shown }), plain);
    const annotations = (redacted.metadata as { annotations: Record<string, string> }).annotations;
    assert.equal(annotations['kapp.k14s.io/original'], hashOf(kappOriginal));
    for (const key of SECRET_ANNOTATIONS_SHOWN) assert.equal(annotations[key], `value-of-${key}`);
  });

  it('hides data, stringData or annotations whole when they are not maps', () => {
    const odd: JsonObject = {
      metadata: { name: 's', annotations: 'odd' },
      data: 'not-a-map',
      stringData: [1],
    };
    assert.deepEqual(redactSecret(odd, plain), {
      metadata: { name: 's', annotations: hashOf('odd') },
      data: hashOf('not-a-map'),
      stringData: plain.marker([1]),
    });
  });

  it('leaks no value anywhere in the result', () => {
    const text = JSON.stringify(redactSecret(secret(), plain));
    for (const value of [PASSWORD, TOKEN, 'Y2VydA==', 'super-secret'])
      assert.equal(text.includes(value), false, value);
  });

  it('does not mutate its input', () => {
    const input = secret();
    const before = structuredClone(input);
    redactSecret(input, plain);
    assert.deepEqual(input, before);
  });

  it('gives a stable hash, different for different values', () => {
    assert.equal(plain.marker('a'), plain.marker('a'));
    assert.equal(plain.marker('a'), '<redacted sha256:ca978112>');
    assert.notEqual(plain.marker('a'), plain.marker('b'));
    assert.match(plain.marker(''), /^<redacted sha256:[0-9a-f]{8}>$/);
    const changed = secret();
    changed.data = { password: 'bmV3', 'tls.crt': 'Y2VydA==' };
    const before = redactSecret(secret(), plain).data as JsonObject;
    const after = redactSecret(changed, plain).data as JsonObject;
    assert.notEqual(before.password, after.password);
    assert.equal(before['tls.crt'], after['tls.crt']);
  });

  it('handles a Secret without data or annotations', () => {
    const bare: JsonObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } };
    assert.deepEqual(redactSecret(bare, plain), bare);
  });

  it('keeps a key named __proto__ as a key', () => {
    const input = JSON.parse(
      `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"__proto__":"eA=="}}`,
    );
    const data = redactSecret(input, plain).data as JsonObject;
    assert.deepEqual(Object.keys(data), ['__proto__']);
    assert.equal(Object.getOwnPropertyDescriptor(data, '__proto__')?.value, hashOf('eA=='));
  });
});

describe('Redactor', () => {
  it('with a key, marks values with an HMAC-SHA256 that the plain hash of a guess does not confirm', () => {
    const keyed = new Redactor(KEY);
    const expected = createHmac('sha256', KEY).update('hunter2').digest('hex').slice(0, 8);
    assert.equal(keyed.marker('hunter2'), `<redacted hmac:${expected}>`);
    assert.equal(keyed.marker('hunter2'), keyed.marker('hunter2'));
    assert.notEqual(keyed.marker('hunter2').slice(-9), plain.marker('hunter2').slice(-9));
    assert.notEqual(new Redactor('x'.repeat(32)).marker('hunter2'), keyed.marker('hunter2'));
    assert.equal(keyed.kind, 'hmac');
    assert.equal(plain.kind, 'sha256');
  });

  it('names its hashing for the state file without revealing the key', () => {
    assert.equal(plain.id, 'sha256');
    const id = new Redactor(KEY).id;
    assert.match(id, /^hmac:[0-9a-f]{16}$/);
    assert.equal(id.includes(KEY), false);
    assert.notEqual(new Redactor('y'.repeat(32)).id, id);
  });

  it('hashes non-string values as their JSON', () => {
    assert.equal(plain.marker({ a: 1 }), hashOf('{"a":1}'));
    assert.equal(plain.marker(42), hashOf('42'));
  });
});
