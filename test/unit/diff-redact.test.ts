import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { redactedValue, redactSecret } from '../../src/diff/redact.ts';
import type { JsonObject } from '../../src/kube/types.ts';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const PASSWORD = 'c3VwZXItc2VjcmV0LXBhc3N3b3Jk'; // base64 of super-secret-password
const TOKEN = 'plain-token-value';

function hashOf(value: string): string {
  return `<redacted sha256:${createHash('sha256').update(value).digest('hex').slice(0, 8)}>`;
}

function secret(): JsonObject {
  const lastApplied = JSON.stringify({ apiVersion: 'v1', kind: 'Secret', data: { password: PASSWORD } });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'db', namespace: 'shop', annotations: { [LAST_APPLIED]: lastApplied, team: 'data' } },
    type: 'Opaque',
    data: { password: PASSWORD, 'tls.crt': 'Y2VydA==' },
    stringData: { token: TOKEN },
  };
}

describe('redactSecret', () => {
  it('replaces data, stringData and the last-applied annotation by a short hash, keeping the keys', () => {
    const input = secret();
    const lastApplied = (input.metadata as { annotations: Record<string, string> }).annotations[
      LAST_APPLIED
    ]!;
    assert.deepEqual(redactSecret(input), {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'db',
        namespace: 'shop',
        annotations: { [LAST_APPLIED]: hashOf(lastApplied), team: 'data' },
      },
      type: 'Opaque',
      data: { password: hashOf(PASSWORD), 'tls.crt': hashOf('Y2VydA==') },
      stringData: { token: hashOf(TOKEN) },
    });
  });

  it('leaks no value anywhere in the result', () => {
    const text = JSON.stringify(redactSecret(secret()));
    for (const value of [PASSWORD, TOKEN, 'Y2VydA==', 'super-secret'])
      assert.equal(text.includes(value), false, value);
  });

  it('does not mutate its input', () => {
    const input = secret();
    const before = structuredClone(input);
    redactSecret(input);
    assert.deepEqual(input, before);
  });

  it('gives a stable hash, different for different values', () => {
    assert.equal(redactedValue('a'), redactedValue('a'));
    assert.equal(redactedValue('a'), '<redacted sha256:ca978112>');
    assert.notEqual(redactedValue('a'), redactedValue('b'));
    assert.match(redactedValue(''), /^<redacted sha256:[0-9a-f]{8}>$/);
    const changed = secret();
    changed.data = { password: 'bmV3', 'tls.crt': 'Y2VydA==' };
    const before = redactSecret(secret()).data as JsonObject;
    const after = redactSecret(changed).data as JsonObject;
    assert.notEqual(before.password, after.password);
    assert.equal(before['tls.crt'], after['tls.crt']);
  });

  it('returns anything that is not a v1 Secret as the same reference', () => {
    const configMap: JsonObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'c' },
      data: { a: 'b' },
    };
    assert.equal(redactSecret(configMap), configMap);
    const lookalike: JsonObject = {
      apiVersion: 'example.com/v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { a: 'b' },
    };
    assert.equal(redactSecret(lookalike), lookalike);
  });

  it('handles a Secret without data or annotations', () => {
    const bare: JsonObject = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } };
    assert.deepEqual(redactSecret(bare), bare);
  });

  it('keeps a key named __proto__ as a key', () => {
    const input = JSON.parse(
      `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"__proto__":"eA=="}}`,
    );
    const data = redactSecret(input).data as JsonObject;
    assert.deepEqual(Object.keys(data), ['__proto__']);
    assert.equal(Object.getOwnPropertyDescriptor(data, '__proto__')?.value, hashOf('eA=='));
  });
});
