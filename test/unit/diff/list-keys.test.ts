import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listItemKey } from '../../../src/diff/list-keys.ts';

describe('listItemKey', () => {
  it('prefers a string name', () => {
    assert.equal(listItemKey({ name: 'web', containerPort: 80 }), 'name=web');
    assert.equal(
      listItemKey({ name: 7, containerPort: 80 }),
      'containerPort=80/"TCP"',
      'a non-string name is no key',
    );
  });

  it('keys ports by number and protocol, TCP when absent', () => {
    assert.equal(listItemKey({ containerPort: 53, protocol: 'UDP' }), 'containerPort=53/"UDP"');
    assert.equal(listItemKey({ port: 443 }), 'port=443/"TCP"');
    assert.notEqual(listItemKey({ port: 80 }), listItemKey({ port: '80' }));
  });

  it('falls back through mountPath, devicePath, ip, type, topologyKey and key', () => {
    assert.equal(listItemKey({ mountPath: '/data', readOnly: true }), 'mountPath="/data"');
    assert.equal(listItemKey({ devicePath: '/dev/xvda' }), 'devicePath="/dev/xvda"');
    assert.equal(listItemKey({ ip: '10.0.0.1', hostnames: ['a'] }), 'ip="10.0.0.1"');
    assert.equal(listItemKey({ type: 'Ready', status: 'True' }), 'type="Ready"');
    assert.equal(listItemKey({ topologyKey: 'zone', maxSkew: 1 }), 'topologyKey="zone"');
    assert.equal(listItemKey({ key: 'gpu', operator: 'Exists' }), 'key="gpu"');
    assert.equal(listItemKey({ type: 'Ready', key: 'k' }), 'type="Ready"', 'the first present wins');
  });

  it('gives no key to items without one, primitives, null and arrays', () => {
    assert.equal(listItemKey({ verbs: ['get'] }), undefined);
    assert.equal(listItemKey('a'), undefined);
    assert.equal(listItemKey(null), undefined);
    assert.equal(listItemKey([{ name: 'x' }]), undefined);
  });
});
